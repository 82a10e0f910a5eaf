from rlfactory_tool_servers import faulty
from rlfactory_tool_servers.launch import serve

serve(faulty)
