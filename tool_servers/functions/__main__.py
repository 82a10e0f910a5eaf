from rlfactory_tool_servers.functions.server import build_server
from rlfactory_tool_servers.launch import serve

serve(build_server)
