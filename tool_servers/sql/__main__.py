from tool_servers.launch import serve
from tool_servers.sql.server import build_server

serve(build_server)
