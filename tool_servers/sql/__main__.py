from rlfactory_tool_servers.launch import serve
from rlfactory_tool_servers.sql.server import build_server

serve(build_server)
