"""Training data files from any rlf env's tasks: verl's parquet layout and OpenRLHF's jsonl layout.

A row names the env (id and kwargs) and carries the task in full, so the adapter rebuilds the exact episode from
the row alone: ``reset(options={"task": task})``. The prompt columns hold the env's own first messages (and, for
OpenRLHF with a tokenizer, the prompt already rendered with the tool schemas, since OpenRLHF's dataset applies
the chat template without tools).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlfactory_adapters.chat_prompt import prompt_text, template_kwargs_for
from rlfactory_envs.env_spec import make_env, resolve
from rlfactory_envs.kernel.families import tooling_of

VERL_AGENT_NAME = "rlf_agent"


@dataclass
class TaskRow:
    """One task of one env, with what a trainer's data file shows of it."""

    env_id: str
    env_kwargs: dict[str, Any]
    index: int
    dataset: str
    task: dict[str, Any]
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    ground_truth: Any
    template_kwargs: dict[str, Any]

    def label(self) -> str:
        """The JSON the adapters read back: ``{"env_id", "env_kwargs", "task"}``."""
        return json.dumps({"env_id": self.env_id, "env_kwargs": self.env_kwargs, "task": self.task})


def task_rows(env_id: str, env_kwargs: Mapping[str, Any] | None = None, *, limit: int | None = None,
              start: int = 0) -> Iterator[TaskRow]:
    """The env's tasks in dataset order from ``start`` (at most ``limit``), each reset once for its prompt.

    ``env_id`` is a registered id or an env spec path; a spec is resolved here, so each row names the registered
    id and the spec's settings (paths absolute) and plays without the spec file."""
    spec = resolve(env_id, env_kwargs)
    env = make_env(spec.env_id, **spec.kwargs)  # built and checked as the adapters build theirs; closed, not pooled
    try:
        stop = len(env.tasks) if limit is None else min(len(env.tasks), start + limit)
        for index in range(start, stop):
            task = env.tasks[index]
            _, info = env.reset(options={"task_id": task.task_id})
            yield TaskRow(env_id=spec.env_id, env_kwargs=spec.kwargs, index=index, dataset=info["dataset"],
                          task=info["task"], messages=info["messages"], tools=info["tools"],
                          ground_truth=tooling_of(env).ground_truth(env, task),
                          template_kwargs=template_kwargs_for(env))
    finally:
        env.close()


def verl_record(row: TaskRow, agent_name: str = VERL_AGENT_NAME, split: str = "train") -> dict[str, Any]:
    """verl's RLHFDataset row; ``extra_info`` holds the env and task as JSON strings (one schema for all envs)."""
    return {
        "data_source": row.dataset,
        "prompt": row.messages,
        "ability": row.env_id.split("/", 1)[-1].split("-", 1)[0].lower(),
        "reward_model": {"style": "rule", "ground_truth": row.ground_truth},
        "extra_info": {"index": row.index, "split": split, "env_id": row.env_id,
                       "env_kwargs": json.dumps(row.env_kwargs), "task": json.dumps(row.task)},
        "agent_name": agent_name,
    }


def openrlhf_record(row: TaskRow, tokenizer: Any = None) -> dict[str, Any]:
    """OpenRLHF's jsonl row: ``prompt`` (the rendered prompt text with a tokenizer, else the chat messages; use
    ``--data.apply_chat_template`` only for the latter) and ``label`` (the env and task as JSON). The agent
    renders the prompt it trains on itself; this one reaches OpenRLHF's logs and length filters."""
    prompt: Any = row.messages
    if tokenizer is not None:
        prompt = prompt_text(tokenizer, row.messages, row.tools, **row.template_kwargs)
    return {"prompt": prompt, "label": row.label(), "datasource": row.dataset}


def write_verl_parquet(rows: Iterable[TaskRow], path: str | Path, **record_kwargs: Any) -> int:
    """Write rows as verl's parquet file; returns the row count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = [verl_record(row, **record_kwargs) for row in rows]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(records), str(path))
    return len(records)


def write_openrlhf_jsonl(rows: Iterable[TaskRow], path: str | Path, tokenizer: Any = None) -> int:
    """Write rows as OpenRLHF's jsonl file; returns the row count."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with open(path, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(openrlhf_record(row, tokenizer), ensure_ascii=False) + "\n")
            count += 1
    return count
