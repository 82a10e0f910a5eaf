from rlfactory_tool_servers import search
from rlfactory_tool_servers.launch import serve

serve(search)
