from tool_servers.launch import serve
from tool_servers.sleep.server import build_server

serve(build_server)
