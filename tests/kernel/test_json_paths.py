"""The step's JSON shortcuts read and write exactly what ``json.loads`` and ``json.dumps`` do."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from rlfactory_envs.kernel.env import _ARGUMENTS_JSON
from rlfactory_envs.kernel.parsers import _strict_json

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner,
                                                                                       max_size=4), max_leaves=12)
PIECES = st.sampled_from(['{', '}', '[', ']', '"', '"a"', ':', ',', ' ', '1', '-', '.5', 'e9', 'true', 'nul', 'NaN',
                          '\\u12', '\ufeff', '\n', 'x', '{"name": "s", "arguments": {}}'])


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_arguments_are_written_as_json_dumps_writes_them(value):
    arguments = {"value": value}
    assert _ARGUMENTS_JSON(arguments) == json.dumps(arguments, ensure_ascii=False)


def loads_reading(body: str) -> tuple[object, str]:
    try:
        return json.loads(body), ""
    except json.JSONDecodeError as exc:
        return None, exc.msg


@settings(max_examples=600, deadline=None)
@given(st.lists(PIECES, min_size=1, max_size=10).map("".join).map(str.strip).filter(bool) | VALUES.map(json.dumps))
def test_a_block_is_read_as_json_loads_reads_it(body):
    value, problem = _strict_json(body)
    expected, reason = loads_reading(body)
    assert json.dumps(value) == json.dumps(expected) and bool(problem) == bool(reason)
    assert reason in problem
