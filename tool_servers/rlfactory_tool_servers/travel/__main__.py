from rlfactory_tool_servers import travel
from rlfactory_tool_servers.launch import serve

serve(travel)
