#!/usr/bin/env bash
# Serve retrieval from one host and let every rollout worker reach it over streamable HTTP.
#
# On the retrieval host (binds 127.0.0.1 unless --host says otherwise; put it behind your cluster network):
#   rlf serve search --corpus /data/wiki-18.jsonl --index-dir /data/bm25-wiki18 --transport http --host 0.0.0.0 --port 8001
# On each worker, point the env at it (no local index is built); every question once (N: the first N only), OUT the
# trajectories file, and more `rlf rollout` options after the script's name (the questions are the embedded sample's
# unless you name yours):
#   RETRIEVER_URL=http://retrieval-host:8001/mcp bash examples/search_server_over_http.sh --set data_path=nq.jsonl
set -euo pipefail
RETRIEVER_URL=${RETRIEVER_URL:-http://127.0.0.1:8001/mcp}
OUT=${OUT:-trajectories_http.jsonl}
TASKS=()
if [ -n "${N:-}" ]; then TASKS=(-n "$N"); fi
rlf rollout rlf/Search-NQ-v0 "${TASKS[@]}" \
  --env-kwargs "{\"tool_servers\": {\"mcpServers\": {\"search\": {\"url\": \"$RETRIEVER_URL\", \"timeout_s\": 30, \"max_concurrency\": 32}}}}" \
  --out "$OUT" "$@"
