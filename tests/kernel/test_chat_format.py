"""The observation delta must be exactly what the official Qwen3 chat template renders for the same turn."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlfactory_envs.kernel.chat_format import Qwen3ChatFormat, SearchR1Format, make_chat_format
from rlfactory_envs.kernel.tool_call import ToolResult
from tests.conftest import shared_file


@pytest.fixture(scope="module")
def qwen3_template():
    pytest.importorskip("jinja2")
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    config = json.loads(shared_file("tokenizers/qwen3/tokenizer_config.json").read_text())
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda value, **kw: json.dumps(value, ensure_ascii=False)
    return env.from_string(config["chat_template"])


def render(template, messages, **kwargs):
    return template.render(messages=messages, tools=None, **kwargs)


texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="<>\r"), max_size=60)


@settings(max_examples=80, deadline=None)
@given(results=st.lists(texts, max_size=3), feedback=st.none() | texts.filter(bool), call=texts,
       thinking=st.booleans())
def test_qwen3_observation_matches_the_official_template(qwen3_template, results, feedback, call, thinking):
    if not results and feedback is None:
        feedback = "Call a tool or answer."  # the env always has one or the other
    fmt = Qwen3ChatFormat(enable_thinking=thinking)
    user = {"role": "user", "content": "Question: who?"}
    response = f"<tool_call>\n{call}\n</tool_call>"
    before = render(qwen3_template, [user], add_generation_prompt=True, enable_thinking=thinking)
    added = [{"role": "tool", "content": text} for text in results]
    if feedback:
        added.append({"role": "user", "content": feedback})
    after = render(qwen3_template, [user, {"role": "assistant", "content": response}, *added],
                   add_generation_prompt=True, enable_thinking=thinking)
    obs = fmt.observation(response, [ToolResult("search", text) for text in results], feedback)
    assert after.endswith(response + obs)
    if thinking:
        # Nothing is dropped on re-rendering, so the transcript is the template's rendering exactly.
        assert before + response + obs == after
    else:
        # The template drops the empty think block of earlier turns (it is not append-only); the env never
        # re-renders, it appends its delta to what the model saw.
        assert after.startswith(render(qwen3_template, [user]))


def test_qwen3_does_not_repeat_an_end_of_turn_the_model_generated():
    fmt = Qwen3ChatFormat()
    plain = fmt.observation("x", [ToolResult("t", "r")], None)
    assert plain.startswith("<|im_end|>\n<|im_start|>user\n<tool_response>\nr\n</tool_response><|im_end|>\n")
    assert fmt.observation("x<|im_end|>", [ToolResult("t", "r")], None) == plain[len("<|im_end|>"):]
    assert plain.endswith("<|im_start|>assistant\n")
    assert Qwen3ChatFormat(enable_thinking=False).observation("x", [], "f").endswith("<think>\n\n</think>\n\n")


def test_qwen3_feedback_is_a_user_turn_of_its_own():
    obs = Qwen3ChatFormat().observation("x", [], "Call a tool.")
    assert obs == "<|im_end|>\n<|im_start|>user\nCall a tool.<|im_end|>\n<|im_start|>assistant\n"
    obs = Qwen3ChatFormat().observation("x", [ToolResult("t", "r")], "Too many calls.")
    assert obs == ("<|im_end|>\n<|im_start|>user\n<tool_response>\nr\n</tool_response><|im_end|>\n"
                   "<|im_start|>user\nToo many calls.<|im_end|>\n<|im_start|>assistant\n")


def test_search_r1_information_block():
    fmt = make_chat_format("search_r1")
    assert isinstance(fmt, SearchR1Format)
    obs = fmt.observation("<search>q</search>", [ToolResult("search", "Doc 1(Title: A) a\n")], None)
    assert obs == "\n\n<information>Doc 1(Title: A) a</information>\n\n"
    assert fmt.observation("?", [], "My previous action is invalid.") == "\nMy previous action is invalid.\n"


def test_stop_sequences_end_exactly_the_actions_of_a_format_without_an_end_of_turn_token():
    import gymnasium as gym

    from rlfactory_envs.kernel.parsers import SearchR1Parser

    # Qwen3 ends each response with its EOS (<|im_end|>); Search-R1's tags have none, so the engine must stop there
    assert Qwen3ChatFormat().stop_sequences == () == make_chat_format("hermes", enable_thinking=False).stop_sequences
    fmt = make_chat_format("search_r1")
    assert fmt.stop_sequences == ("</search>", "</answer>")
    # the text up to and including a stop string is a whole action: each stop closes one of the parser's tags
    parser = SearchR1Parser()
    assert parser.parse("<think>look it up</think>\n<search> who founded Pellory </search>").tool_calls[0].arguments \
        == {"query": "who founded Pellory"}
    assert parser.parse("<think>found</think>\n<answer> 1306 </answer>").answer == "1306"
    for env_id, stops in (("rlf/Search-NQ-SearchR1-v0", ("</search>", "</answer>")), ("rlf/Search-NQ-v0", ())):
        env = gym.make(env_id).unwrapped
        try:
            assert env.chat_format.stop_sequences == stops
        finally:
            env.close()
