from rlfactory_tool_servers import android
from rlfactory_tool_servers.launch import serve

serve(android)
