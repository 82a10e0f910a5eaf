from rlfactory_tool_servers.launch import serve
from rlfactory_tool_servers.search.server import build_server

serve(build_server)
