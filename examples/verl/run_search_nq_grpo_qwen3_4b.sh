#!/usr/bin/env bash
# GRPO on rlf/Search-NQ-v0 with Qwen3-4B, verl 0.9.x, one node of 8 GPUs, vLLM async rollout.
#
# Each sample is one episode of the env played by rlfactory_adapters.verl.RlfAgentLoop (token-in/token-out): the model
# calls the search tool (Qwen3 <tool_call> format), the env answers with the passages (mask 0), the episode ends
# with <answer>...</answer> or after max_turns responses, and the env's exact-match reward is the sample's score.
#
# Needs: pip install -e ".[verl]" plus verl's GPU stack (vllm, flash-attn; see verl's install guide), and
#   NQ_TRAIN   questions to train on: NQ-open jsonl ({"question", "answer"}), FlashRAG jsonl or Search-R1's parquet
#   NQ_TEST    questions to validate on (NQ-open.dev.jsonl is the "nq test" split Search-R1 reports)
#   WIKI       the wiki-18 corpus jsonl ({"id", "contents"}); INDEX_DIR: where its BM25 index is built once (by
#              the data step) and memory-mapped afterwards by every rollout worker (shared through the page cache)
# Metrics go to verl's trainer.logger, LOGGER: '["console","wandb"]' when WANDB_API_KEY is set (wandb needs an API
# key), else '["console"]'; set LOGGER yourself for another choice (after `wandb login`, say).
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON=${PYTHON:-python3}
MODEL=${MODEL:-Qwen/Qwen3-4B}
DATA_DIR=${DATA_DIR:-$HOME/rlf-data/search_nq}
EXPERIMENT=${EXPERIMENT:-search-nq-grpo-qwen3-4b}

# 1. Data: verl's parquet layout (data_source, prompt, reward_model.ground_truth, extra_info with the env id,
#    env kwargs and task as JSON, agent_name). The paths in the env kwargs must be valid on every node.
#    SKIP_DATA=1 keeps the files already in DATA_DIR (run_search_nq_grpo_http_tools.sh writes its own).
if [ "${SKIP_DATA:-0}" != 1 ]; then
  NQ_TRAIN=${NQ_TRAIN:?set NQ_TRAIN to the training questions (jsonl or Search-R1 parquet)}
  NQ_TEST=${NQ_TEST:?set NQ_TEST to the validation questions, e.g. NQ-open.dev.jsonl}
  WIKI=${WIKI:?set WIKI to the wiki-18 corpus jsonl}
  INDEX_DIR=${INDEX_DIR:-$HOME/rlf-data/bm25-wiki18}
  MAX_TURNS=${MAX_TURNS:-4}
  env_kwargs() {  # $1: the questions file
    printf '{"data_path": "%s", "corpus_path": "%s", "index_dir": "%s", "max_turns": %s}' \
      "$1" "$WIKI" "$INDEX_DIR" "$MAX_TURNS"
  }
  "$PYTHON" -m rlfactory_adapters.prepare_data --trainer verl --env rlf/Search-NQ-v0 --agent-name rlf_search_agent \
    --env-kwargs "$(env_kwargs "$NQ_TRAIN")" --split train --out "$DATA_DIR/train.parquet"
  "$PYTHON" -m rlfactory_adapters.prepare_data --trainer verl --env rlf/Search-NQ-v0 --agent-name rlf_search_agent \
    --env-kwargs "$(env_kwargs "$NQ_TEST")" --split test --limit "${VAL_LIMIT:-1000}" --out "$DATA_DIR/test.parquet"
fi

if [ -z "${LOGGER:-}" ]; then
  if [ -n "${WANDB_API_KEY:-}" ]; then
    LOGGER='["console","wandb"]'
  else
    LOGGER='["console"]'
    echo "$(basename "$0"): WANDB_API_KEY is not set, so the metrics go to the console only; set it (or" \
         "LOGGER='[\"console\",\"wandb\"]' after wandb login) to log to wandb" >&2
  fi
fi

# 2. GRPO. The env decides the turns (max_turns above) and the reward (reward_score of each sample, so no reward
#    function is configured); rollout.response_length bounds all model and tool tokens of an episode together.
#    Qwen3 thinks by default, as does the env's Qwen3 format. To turn thinking off, add "enable_thinking": false to
#    the env kwargs above: the loop renders the prompt with the env's thinking mode (so it agrees with the env's
#    observations), whatever data.apply_chat_template_kwargs says.
"$PYTHON" -m verl.trainer.main_ppo \
  algorithm.adv_estimator=grpo \
  algorithm.use_kl_in_reward=False \
  data.train_files="$DATA_DIR/train.parquet" \
  data.val_files="$DATA_DIR/test.parquet" \
  data.train_batch_size=256 \
  data.max_prompt_length=1024 \
  data.max_response_length=4096 \
  data.filter_overlong_prompts=True \
  data.truncation=error \
  data.return_raw_chat=True \
  actor_rollout_ref.model.path="$MODEL" \
  actor_rollout_ref.model.use_remove_padding=True \
  actor_rollout_ref.model.enable_gradient_checkpointing=True \
  actor_rollout_ref.actor.optim.lr=1e-6 \
  actor_rollout_ref.actor.ppo_mini_batch_size=64 \
  actor_rollout_ref.actor.use_dynamic_bsz=True \
  actor_rollout_ref.actor.ppo_max_token_len_per_gpu=16384 \
  actor_rollout_ref.actor.use_kl_loss=True \
  actor_rollout_ref.actor.kl_loss_coef=0.001 \
  actor_rollout_ref.actor.kl_loss_type=low_var_kl \
  actor_rollout_ref.actor.entropy_coeff=0 \
  actor_rollout_ref.actor.fsdp_config.param_offload=False \
  actor_rollout_ref.actor.fsdp_config.optimizer_offload=False \
  actor_rollout_ref.ref.log_prob_use_dynamic_bsz=True \
  actor_rollout_ref.ref.fsdp_config.param_offload=True \
  actor_rollout_ref.rollout.name=vllm \
  actor_rollout_ref.rollout.mode=async \
  actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
  actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
  actor_rollout_ref.rollout.n=8 \
  actor_rollout_ref.rollout.temperature=1.0 \
  actor_rollout_ref.rollout.calculate_log_probs=True \
  actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=True \
  actor_rollout_ref.rollout.multi_turn.enable=True \
  actor_rollout_ref.rollout.agent.num_workers=8 \
  actor_rollout_ref.rollout.agent.default_agent_loop=rlf_search_agent \
  actor_rollout_ref.rollout.agent.agent_loop_config_path="$PWD/adapters/rlfactory_adapters/verl/agent_loop.yaml" \
  actor_rollout_ref.rollout.val_kwargs.n=1 \
  actor_rollout_ref.rollout.val_kwargs.do_sample=False \
  trainer.critic_warmup=0 \
  trainer.logger="$LOGGER" \
  trainer.project_name=rlfactory-envs \
  trainer.experiment_name="$EXPERIMENT" \
  trainer.n_gpus_per_node=8 \
  trainer.nnodes=1 \
  trainer.val_before_train=True \
  trainer.save_freq=50 \
  trainer.test_freq=25 \
  trainer.total_epochs=1 \
  "$@"
