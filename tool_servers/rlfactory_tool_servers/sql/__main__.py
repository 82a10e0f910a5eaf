from rlfactory_tool_servers import sql
from rlfactory_tool_servers.launch import serve

serve(sql)
