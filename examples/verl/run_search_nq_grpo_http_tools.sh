#!/usr/bin/env bash
# GRPO on rlf/Search-NQ-v0 with Qwen3-4B (verl 0.9.x, vLLM async rollout) where retrieval runs on another host:
# every rollout worker reaches the search MCP server over streamable HTTP, so no GPU node loads the corpus.
#
# On the retrieval host first (binds 127.0.0.1 unless --host says otherwise; keep it inside the cluster network):
#   rlf serve search --corpus /data/wiki-18.jsonl --index-dir /data/bm25-wiki18 --transport http \
#       --host 0.0.0.0 --port 8001
# Then, on the training node, with RETRIEVER_URL pointing at it (the data step below connects to it once, so it
# fails early when the server cannot be reached):
#   RETRIEVER_URL=http://retrieval-host:8001/mcp NQ_TRAIN=... NQ_TEST=... bash examples/verl/run_search_nq_grpo_http_tools.sh
#
# The server's URL travels in each row's env kwargs (extra_info.env_kwargs), so the same data works on any number of
# nodes; re-run the data step to point at another host. Per-server tuning: timeout_s (deadline of a call),
# max_concurrency (calls in flight per worker process), sessions (pooled MCP sessions), retries.
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON=${PYTHON:-python3}
RETRIEVER_URL=${RETRIEVER_URL:?set RETRIEVER_URL to the search server, e.g. http://retrieval-host:8001/mcp}
NQ_TRAIN=${NQ_TRAIN:?set NQ_TRAIN to the training questions (jsonl or Search-R1 parquet)}
NQ_TEST=${NQ_TEST:?set NQ_TEST to the validation questions, e.g. NQ-open.dev.jsonl}
DATA_DIR=${DATA_DIR:-$HOME/rlf-data/search_nq_http}
MAX_TURNS=${MAX_TURNS:-4}
VAL_LIMIT=${VAL_LIMIT:-1000}

env_kwargs() {  # $1: the questions file
  printf '{"data_path": "%s", "max_turns": %s, "tool_servers": {"mcpServers": {"search": {"url": "%s", "timeout_s": 30, "max_concurrency": 64, "sessions": 2, "retries": 2}}}}' \
    "$1" "$MAX_TURNS" "$RETRIEVER_URL"
}
"$PYTHON" -m rlfactory_adapters.prepare_data --trainer verl --env rlf/Search-NQ-v0 --agent-name rlf_search_agent \
  --env-kwargs "$(env_kwargs "$NQ_TRAIN")" --split train --out "$DATA_DIR/train.parquet"
"$PYTHON" -m rlfactory_adapters.prepare_data --trainer verl --env rlf/Search-NQ-v0 --agent-name rlf_search_agent \
  --env-kwargs "$(env_kwargs "$NQ_TEST")" --split test --limit "$VAL_LIMIT" --out "$DATA_DIR/test.parquet"

# Everything else is the single-node recipe; only the data differs.
DATA_DIR="$DATA_DIR" SKIP_DATA=1 EXPERIMENT=${EXPERIMENT:-search-nq-grpo-qwen3-4b-http-tools} \
  exec bash examples/verl/run_search_nq_grpo_qwen3_4b.sh "$@"
