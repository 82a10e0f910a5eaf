from rlfactory_tool_servers import qwen_tools
from rlfactory_tool_servers.launch import serve

serve(qwen_tools)
