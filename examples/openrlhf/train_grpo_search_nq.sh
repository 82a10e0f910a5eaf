#!/usr/bin/env bash
# GRPO on rlf/Search-NQ-v0 with Qwen3-4B, OpenRLHF 0.11.x, one node of 8 GPUs, vLLM engines colocated with the
# DeepSpeed actor and reference (hybrid engine, sleep mode).
#
# Each sample is one episode of the env, played by OpenRLHF's MultiTurnAgentExecutor through
# adapters/rlfactory_adapters/openrlhf/agent_func.py (token-in/token-out): the model calls the search tool (Qwen3 <tool_call>
# format), the env's observation (the passages, with the chat-template markup) is appended as mask-0 tokens, the
# episode ends with <answer>...</answer> or after max_turns responses, and the env's exact-match reward is the
# sample's reward. --data.max_len bounds the prompt, the model's tokens and the tool text of an episode together.
#
# Needs: pip install -e ".[openrlhf]" and OpenRLHF's GPU stack (pip install "openrlhf[vllm]==0.11.2"), and
#   NQ_TRAIN   questions to train on: NQ-open jsonl ({"question", "answer"}), FlashRAG jsonl or Search-R1's parquet
#   NQ_TEST    questions to evaluate on (NQ-open.dev.jsonl is the "nq test" split Search-R1 reports)
#   WIKI       the wiki-18 corpus jsonl ({"id", "contents"}); INDEX_DIR: where its BM25 index is built once (by
#              the data step) and memory-mapped afterwards by every vLLM engine process
# or, instead of WIKI, RETRIEVER_URL: a search MCP server over HTTP that every engine reaches (no local index):
#   rlf serve search --corpus /data/wiki-18.jsonl --index-dir /data/bm25-wiki18 --transport http --host 0.0.0.0 --port 8001
#
#   NQ_TRAIN=... NQ_TEST=... WIKI=... bash examples/openrlhf/train_grpo_search_nq.sh [more train_ppo_ray flags]
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON=${PYTHON:-python3}
MODEL=${MODEL:-Qwen/Qwen3-4B}
DATA_DIR=${DATA_DIR:-$HOME/rlf-data/search_nq_openrlhf}
OUT_DIR=${OUT_DIR:-$HOME/rlf-runs/search-nq-grpo-qwen3-4b-openrlhf}
MAX_TURNS=${MAX_TURNS:-4}

# 1. Data: OpenRLHF's jsonl layout, one row a task: "prompt" (the env's first messages and tool schemas rendered
#    by the model's chat template; OpenRLHF only logs it, the agent renders the same prompt from the env), "label"
#    (the env id, env kwargs and task as JSON) and "datasource". The paths in the env kwargs must be valid on every
#    node. SKIP_DATA=1 keeps the files already in DATA_DIR.
env_kwargs() {  # $1: the questions file
  if [ -n "${RETRIEVER_URL:-}" ]; then
    printf '{"data_path": "%s", "max_turns": %s, "tool_servers": {"mcpServers": {"search": {"url": "%s", "timeout_s": 30, "max_concurrency": 64, "sessions": 2, "retries": 2}}}}' \
      "$1" "$MAX_TURNS" "$RETRIEVER_URL"
  else
    printf '{"data_path": "%s", "corpus_path": "%s", "index_dir": "%s", "max_turns": %s}' \
      "$1" "${WIKI:?set WIKI to the wiki-18 corpus jsonl, or RETRIEVER_URL to a search server}" \
      "${INDEX_DIR:-$HOME/rlf-data/bm25-wiki18}" "$MAX_TURNS"
  fi
}
if [ "${SKIP_DATA:-0}" != 1 ]; then
  NQ_TRAIN=${NQ_TRAIN:?set NQ_TRAIN to the training questions (jsonl or Search-R1 parquet)}
  NQ_TEST=${NQ_TEST:?set NQ_TEST to the evaluation questions, e.g. NQ-open.dev.jsonl}
  "$PYTHON" -m rlfactory_adapters.prepare_data --trainer openrlhf --env rlf/Search-NQ-v0 --tokenizer "$MODEL" \
    --env-kwargs "$(env_kwargs "$NQ_TRAIN")" --out "$DATA_DIR/train.jsonl"
  "$PYTHON" -m rlfactory_adapters.prepare_data --trainer openrlhf --env rlf/Search-NQ-v0 --tokenizer "$MODEL" \
    --env-kwargs "$(env_kwargs "$NQ_TEST")" --limit "${VAL_LIMIT:-1000}" --out "$DATA_DIR/test.jsonl"
fi

# 2. GRPO: group_norm advantages over 8 samples a prompt, KL as a k3 loss. The env decides the turns and the reward,
#    so neither a reward model nor --reward.remote_url is set. The prompt is already rendered: do not pass
#    --data.apply_chat_template (OpenRLHF's would render it without the tool schemas).
#    Qwen3 thinks by default, as does the env's Qwen3 format; for no thinking put "enable_thinking": false in the
#    env kwargs (the agent then renders the prompt with enable_thinking=False too).
ray status >/dev/null 2>&1 || ray start --head --num-gpus 8 --disable-usage-stats
"$PYTHON" -m openrlhf.cli.train_ppo_ray \
  --ref.num_nodes 1 --ref.num_gpus_per_node 8 \
  --actor.num_nodes 1 --actor.num_gpus_per_node 8 \
  --vllm.num_engines 4 --vllm.tensor_parallel_size 2 --vllm.gpu_memory_utilization 0.6 \
  --vllm.enable_prefix_caching --vllm.enable_sleep --ds.enable_sleep --train.colocate_all \
  --actor.model_name_or_path "$MODEL" \
  --train.agent_func_path "$PWD/adapters/rlfactory_adapters/openrlhf/agent_func.py" \
  --data.prompt_dataset "$DATA_DIR/train.jsonl" --eval.dataset "$DATA_DIR/test.jsonl" \
  --data.input_key prompt --data.label_key label \
  --data.max_len 8192 \
  --rollout.batch_size 128 --rollout.n_samples_per_prompt 8 --rollout.micro_batch_size 8 \
  --rollout.temperature 1.0 --eval.temperature 0.6 --eval.n_samples_per_prompt 1 --eval.steps 20 \
  --train.batch_size 1024 --train.micro_batch_size 4 --train.max_epochs 1 --train.num_episodes 1 \
  --algo.advantage.estimator group_norm \
  --algo.kl.use_loss --algo.kl.estimator k3 --algo.kl.init_coef 0.001 \
  --actor.adam.lr 1e-6 \
  --ds.zero_stage 3 --ds.param_dtype bf16 --ds.packing_samples --actor.gradient_checkpointing_enable \
  --ckpt.output_dir "$OUT_DIR" --ckpt.path "$OUT_DIR/checkpoints" --ckpt.save_steps 50 --ckpt.save_hf \
  --logger.logging_steps 1 --logger.tensorboard_dir "$OUT_DIR/tensorboard" \
  "$@"
