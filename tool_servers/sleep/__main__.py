from rlfactory_tool_servers.launch import serve
from rlfactory_tool_servers.sleep.server import build_server

serve(build_server)
