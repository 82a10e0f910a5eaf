"""How a verl row names its env and task (``extra_info``), and the loop's turn count."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("verl", reason="the verl adapter tests run in .venv-verl (bash .ci/verl.sh): verl is not "
                                   "installed here")

from rlfactory_adapters.verl.agent_loop import count_env_turns  # noqa: E402
from rlfactory_adapters.verl.row_spec import RowSpecError, row_spec  # noqa: E402

TASK = {"question": "q", "golden_answers": ["a"]}


def test_json_text_and_dicts_are_both_read():
    as_text = row_spec({"env_id": "rlf/X-v0", "env_kwargs": json.dumps({"max_turns": 2}), "task": json.dumps(TASK)})
    as_dicts = row_spec({"env_id": "rlf/X-v0", "env_kwargs": {"max_turns": 2}, "task": TASK})
    assert as_text == as_dicts
    assert as_text.env_kwargs == {"max_turns": 2} and as_text.task == TASK


def test_the_loop_config_gives_the_default_env_and_overrides_kwargs():
    spec = row_spec({"task": TASK, "env_kwargs": '{"max_turns": 2, "data_path": "x"}'}, default_env_id="rlf/Y-v0",
                    env_kwargs_override={"max_turns": 5})
    assert spec.env_id == "rlf/Y-v0" and spec.env_kwargs == {"max_turns": 5, "data_path": "x"}


@pytest.mark.parametrize("extra_info, message", [
    (None, "no extra_info.env_id"),
    ({"env_id": "rlf/X-v0"}, "no extra_info.task"),
    ({"env_id": "rlf/X-v0", "task": "{not json"}, "extra_info.task is not valid JSON"),
    ({"env_id": "rlf/X-v0", "task": "[1, 2]"}, "extra_info.task must be a JSON object"),
    ({"env_id": "rlf/X-v0", "task": TASK, "env_kwargs": "3"}, "extra_info.env_kwargs must be a JSON object"),
])
def test_rows_that_cannot_say_get_a_clear_error(extra_info, message):
    with pytest.raises(RowSpecError, match=message):
        row_spec(extra_info)


@pytest.mark.parametrize("mask, turns", [([], 0), ([1, 1], 0), ([1, 0, 0, 1], 1), ([1, 0, 1, 0], 2), ([0, 1], 1)])
def test_env_turns_are_the_runs_of_mask_zero(mask, turns):
    assert count_env_turns(mask) == turns
