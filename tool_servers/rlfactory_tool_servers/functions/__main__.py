from rlfactory_tool_servers import functions
from rlfactory_tool_servers.launch import serve

serve(functions)
