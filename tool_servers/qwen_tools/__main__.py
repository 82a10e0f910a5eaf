from rlfactory_tool_servers.launch import serve
from rlfactory_tool_servers.qwen_tools.server import build_server

serve(build_server)
