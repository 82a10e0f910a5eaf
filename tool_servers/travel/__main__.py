from rlfactory_tool_servers.launch import serve
from rlfactory_tool_servers.travel.server import build_server

serve(build_server)
