"""The SQLite sandbox: read-only databases with deadlines and caps (``engine``), the catalog of a database folder
with its worker threads (``catalog``) and the check that a query is one read-only statement (``statement_check``).
A library, not a server: the SQL tool server and the SQL execution reward both run queries through it."""
