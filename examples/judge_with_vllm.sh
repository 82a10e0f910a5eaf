#!/usr/bin/env bash
# A model judge beside training on one 8-GPU node: Qwen3-32B served by vLLM on GPUs 4-7 (tensor parallel 4) grades
# the answers of rlf/Search-NQ-v0, mixed with exact match (0.7 exact match + 0.3 judge), while the trainer keeps
# GPUs 0-3.
#
#   bash examples/judge_with_vllm.sh                               # starts the judge, waits for it, runs episodes
#   JUDGE_URL=http://judge-host:8001/v1 bash examples/judge_with_vllm.sh   # a judge already serving: no vllm here
#
# The episodes here are played by the env's scripted baseline policy (offline, no policy model), so this checks the
# judge end to end: each episode's info has reward_parts {"exact_match", "judge"} and info["judge"] the judge's reply.
# To evaluate a served policy instead: POLICY_URL=http://127.0.0.1:8000/v1 POLICY_MODEL=Qwen/Qwen3-4B.
# For training, put the same "reward" and "judge" settings in the env kwargs of the trainer's data step, e.g.
#   CUDA_VISIBLE_DEVICES=0,1,2,3 ... python -m rlfactory_adapters.prepare_data --env rlf/Search-NQ-v0 \
#       --env-kwargs "$ENV_KWARGS" ...          (see examples/verl/run_search_nq_grpo_qwen3_4b.sh)
# Each rollout worker then asks the judge over HTTP (at most "concurrency" requests in flight per worker; identical
# answers of a GRPO group are asked once), and a judge that fails scores 0 with the reason in info["reward_reason"]
# (a failed reward, not a wrong answer: rlf rollout, and so this script, exits 1 when every episode's judge failed).
set -euo pipefail

JUDGE_MODEL=${JUDGE_MODEL:-Qwen/Qwen3-32B}
JUDGE_PORT=${JUDGE_PORT:-8001}
JUDGE_GPUS=${JUDGE_GPUS:-4,5,6,7}
JUDGE_URL=${JUDGE_URL:-}
JUDGE_CONCURRENCY=${JUDGE_CONCURRENCY:-64}
N=${N:-64}
OUT_DIR=${OUT_DIR:-runs}

if [ -z "$JUDGE_URL" ]; then
  # Qwen3's thinking is turned off per request below (chat_template_kwargs), so the judge answers in a few tokens.
  CUDA_VISIBLE_DEVICES="$JUDGE_GPUS" vllm serve "$JUDGE_MODEL" --port "$JUDGE_PORT" --tensor-parallel-size 4 \
    --max-model-len 16384 --gpu-memory-utilization 0.9 > judge_vllm.log 2>&1 &
  VLLM_PID=$!
  # on exit, stop the judge and wait for it, so that its GPUs are free when the script returns
  trap 'if kill "$VLLM_PID" 2>/dev/null; then wait "$VLLM_PID" 2>/dev/null || true; fi' EXIT
  JUDGE_URL="http://127.0.0.1:$JUDGE_PORT/v1"
  echo "waiting for the judge at $JUDGE_URL (log: judge_vllm.log)" >&2
  until curl -sf "$JUDGE_URL/models" > /dev/null; do
    kill -0 "$VLLM_PID" 2>/dev/null || { echo "vllm exited; see judge_vllm.log" >&2; exit 1; }
    sleep 2
  done
fi

ENV_KWARGS=$(printf '{"reward": {"exact_match": 0.7, "judge": 0.3}, "judge": {"base_url": "%s", "model": "%s", "concurrency": %s, "extra_body": {"chat_template_kwargs": {"enable_thinking": false}}}}' \
  "$JUDGE_URL" "$JUDGE_MODEL" "$JUDGE_CONCURRENCY")

POLICY=(--policy scripted)
if [ -n "${POLICY_URL:-}" ]; then
  POLICY=(--policy openai --base-url "$POLICY_URL" --model "${POLICY_MODEL:?set POLICY_MODEL with POLICY_URL}")
fi

mkdir -p "$OUT_DIR"
rlf rollout rlf/Search-NQ-v0 "${POLICY[@]}" -n "$N" --env-kwargs "$ENV_KWARGS" \
  --out "$OUT_DIR/judged_rollouts.jsonl" --summary-json "$OUT_DIR/judged_summary.json"
