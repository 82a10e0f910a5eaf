from rlfactory_tool_servers import sleep
from rlfactory_tool_servers.launch import serve

serve(sleep)
