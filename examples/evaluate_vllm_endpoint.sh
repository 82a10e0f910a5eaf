#!/usr/bin/env bash
# Evaluate a model served by vLLM (or any OpenAI-compatible endpoint) on rlf/Search-NQ-v0.
#
#   vllm serve Qwen/Qwen3-4B --port 8000 --enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser qwen3
#   bash examples/evaluate_vllm_endpoint.sh /data/nq/NQ-open.dev.jsonl /data/wiki-18.jsonl
#
# It plays every question of the file once, in order, and reports exact match over all of them: the protocol
# Search-R1 reports (NQ-open dev, 3,610 questions, is its "nq test"). N=500 plays the first 500 only. With a
# reasoning parser on, the policy puts the reasoning back as <think>...</think> so the env sees the raw response.
# The BM25 index of the corpus is built once and cached in INDEX_DIR.
set -euo pipefail
DATA=${1:?NQ-open jsonl or Search-R1 parquet}
CORPUS=${2:?wiki-18 jsonl corpus}
MODEL=${MODEL:-Qwen/Qwen3-4B}
BASE_URL=${BASE_URL:-http://127.0.0.1:8000/v1}
INDEX_DIR=${INDEX_DIR:-$HOME/.cache/rlfactory/bm25-wiki18}
TASKS=()
if [ -n "${N:-}" ]; then TASKS=(-n "$N"); fi

rlf rollout rlf/Search-NQ-v0 --policy openai --base-url "$BASE_URL" --model "$MODEL" "${TASKS[@]}" --batch-size 128 \
  --set data_path="$DATA" --set corpus_path="$CORPUS" --set index_dir="$INDEX_DIR" --set max_turns=4 \
  --temperature 0.0 --max-tokens 1024 --out "eval_$(basename "$MODEL").jsonl" --summary-json "eval_summary.json"
