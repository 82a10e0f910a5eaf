"""NL2SQL: rlf/NL2SQL-Spider-v0 and rlf/NL2SQL-BIRD-v0, explore a real SQLite database with tools, rewarded by
execution."""
