"""The native tool-call dialects read calls as their vLLM parsers do (the cases are those parsers' own behaviour:
what each accepts, and what makes it return the response as text), write calls their parser reads back, and never
raise on model output."""

from __future__ import annotations

import keyword
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlfactory_envs.kernel.dialects import DIALECTS, detect_dialect, dialect
from rlfactory_envs.kernel.dialects.pythonic import UncallableToolWarning, uncallable_names
from rlfactory_envs.kernel.tool_call import ToolCall


def calls(name: str, text: str, **options) -> list[tuple[str, dict]]:
    action = dialect(name).parser(max_tool_calls=8, answer_tag="answer", **options).parse(text)
    return [(c.name, c.arguments) for c in action.tool_calls]


def errors(name: str, text: str, **options) -> list[str]:
    return dialect(name).parser(max_tool_calls=8, answer_tag="answer", **options).parse(text).errors


# -- Llama 3.x JSON ---------------------------------------------------------------------------------------------

def test_llama3_reads_parameters_or_arguments_after_an_optional_python_tag():
    assert calls("llama3_json", '<|python_tag|>{"name": "search", "parameters": {"query": "x"}}<|eom_id|>') == \
        [("search", {"query": "x"})]
    assert calls("llama3_json", '{"name": "a", "arguments": {}}; {"name": "b", "parameters": {"n": 1}}') == \
        [("a", {}), ("b", {"n": 1})]


@pytest.mark.parametrize("text", ['{"parameters": {"q": 1}}', '{"name": "s"}', "{'name': 's', 'parameters': {}}",
                                  '{"name": "s", "parameters": {}} and {not json'])
def test_llama3_runs_nothing_when_vllm_would_return_text(text):
    assert calls("llama3_json", text) == [] and len(errors("llama3_json", text)) == 1


def test_llama3_repairs_only_when_asked_and_says_so():
    text = "{'name': 'search', 'parameters': {'query': 'x',}}"
    assert calls("llama3_json", text, repair=True) == [("search", {"query": "x"})]
    assert errors("llama3_json", text, repair=True)[0].startswith("The tool calls were repaired before they ran")


def test_an_answer_before_any_call_is_the_answer():
    action = dialect("llama3_json").parser().parse('<answer>Paris {the city}</answer>')
    assert action.answer == "Paris {the city}" and action.tool_calls == []


# -- Mistral ----------------------------------------------------------------------------------------------------

def test_mistral_reads_the_array_after_tool_calls_and_takes_it_out_of_text_as_vllm_does():
    assert calls("mistral", '[TOOL_CALLS] [{"name": "s", "arguments": {"q": 1}}, {"name": "t", "arguments": {}}]</s>') \
        == [("s", {"q": 1}), ("t", {})]
    assert calls("mistral", 'ok [TOOL_CALLS] here: [{"name": "s", "arguments": {"q": 1}}] done') == [("s", {"q": 1})]


@pytest.mark.parametrize("text", ['[TOOL_CALLS] [{"name": "s", "arguments": {}}][TOOL_CALLS] []',
                                  '[TOOL_CALLS] {"name": "s"', '[TOOL_CALLS] [{"name": "s", "arguments": "q"}]'])
def test_mistral_refuses_what_its_parser_cannot_return_as_calls(text):
    assert calls("mistral", text) == [] and errors("mistral", text)


def test_mistral_v11_reads_name_then_arguments_after_each_token():
    assert calls("mistral_v11", '[TOOL_CALLS]search{"q": "x"}[TOOL_CALLS]add[ARGS]{"a": 1}') == \
        [("search", {"q": "x"}), ("add", {"a": 1})]
    assert calls("mistral_v11", "[TOOL_CALLS]search{q: x}") == []


# -- pythonic (Gemma 3) ---------------------------------------------------------------------------------------------

def test_pythonic_reads_a_list_of_calls_with_literal_keyword_arguments():
    text = '[search(query="who founded Pellory", topk=3), note(tags=["a", "b"], meta={"k": None, "on": True})]'
    assert calls("pythonic", text + "<end_of_turn>") == [
        ("search", {"query": "who founded Pellory", "topk": 3}),
        ("note", {"tags": ["a", "b"], "meta": {"k": None, "on": True}})]


@pytest.mark.parametrize("text", ["[search(x)]", "[search(query=q)]", "[os.system(cmd='ls')]", "[search(query='a'"])
def test_pythonic_refuses_positional_arguments_variables_attributes_and_cut_calls(text):
    assert calls("pythonic", text) == [] and len(errors("pythonic", text)) == 1


def test_pythonic_refuses_a_negative_number_as_vllms_parser_does_and_repair_reads_it():
    assert calls("pythonic", "[move(dx=-1)]") == [] and "literals" in errors("pythonic", "[move(dx=-1)]")[0]
    assert calls("pythonic", "[move(dx=-1, dy=-2.5)]", repair=True) == [("move", {"dx": -1, "dy": -2.5})]


def test_pythonic_reads_nothing_out_of_text_unless_repairing():
    text = 'Let me search.\n```tool_code\n[search(query="x")]\n```'
    assert calls("pythonic", text) == [] and errors("pythonic", text) == []  # vLLM returns it as text
    assert calls("pythonic", text, repair=True) == [("search", {"query": "x"})]


# -- harmony (GPT-OSS) ------------------------------------------------------------------------------------------

def test_harmony_calls_are_messages_to_functions_and_the_answer_is_in_the_final_channel():
    call = ('<|channel|>analysis<|message|>I need the weather.<|end|><|start|>assistant<|channel|>commentary '
            'to=functions.get_weather <|constrain|>json<|message|>{"city": "Tokyo"}<|call|>')
    assert calls("harmony", call) == [("get_weather", {"city": "Tokyo"})]
    final = ("<|channel|>analysis<|message|>It is <answer>wrong</answer> here<|end|><|start|>assistant"
             "<|channel|>final<|message|>So: <answer>Tokyo</answer><|return|>")
    assert dialect("harmony").parser().parse(final).answer == "Tokyo"
    assert calls("harmony", '<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a": <|call|>') == []


# -- every dialect ----------------------------------------------------------------------------------------------

NAMES = st.from_regex(r"[a-z][a-z_]{0,12}", fullmatch=True).filter(lambda name: not keyword.iskeyword(name))
"""Tool and argument names every dialect can write: a Python keyword (``as``, ``from``) is no name in a pythonic
call, for vLLM's parser (``ast.parse``) as for ours."""
ARGUMENTS = st.dictionaries(NAMES.filter(lambda name: len(name) <= 9),
                            st.one_of(st.text(max_size=20), st.integers(min_value=0), st.booleans(), st.none(),
                                      st.lists(st.integers(min_value=0), max_size=3)), max_size=3)
"""Arguments every dialect's serving parser reads (vLLM's pythonic parser reads no negative number: below)."""


@pytest.mark.parametrize("name", sorted(DIALECTS))
@settings(max_examples=40, deadline=None)
@given(arguments=ARGUMENTS, tool=NAMES)
def test_what_a_dialect_writes_its_parser_reads_back(name, arguments, tool):
    written = DIALECTS[name].render_call(ToolCall(tool, arguments))
    action = DIALECTS[name].parser().parse(written)
    assert [(c.name, c.arguments) for c in action.tool_calls] == [(tool, arguments)] and action.errors == []


def test_a_pythonic_call_named_by_a_keyword_is_an_error_not_a_call():
    action = dialect("pythonic").parser().parse("[search(from=1)]")
    assert action.tool_calls == [] and action.errors


@pytest.mark.parametrize("name", sorted(DIALECTS))
@settings(max_examples=60, deadline=None)
@given(text=st.lists(st.sampled_from(list('[]{}()<>|"\':;,=_ aTOLCSnme\\-1') + [
    "[TOOL_CALLS]", "<|call|>", "<|python_tag|>", "<answer>", "</answer>", "<|channel|>", "<|message|>",
    "to=functions.", "<|start|>", "[ARGS]"]), max_size=60).map("".join))
def test_no_dialect_raises_on_model_output(name, text):
    DIALECTS[name].parser(repair=True).parse(text)
    DIALECTS[name].parser().parse(text)


def test_a_templates_text_names_its_dialect():
    assert detect_dialect("...<tool_call>...").name == "hermes"
    assert detect_dialect("{{ '<|python_tag|>' }} ipython").name == "llama3_json"
    assert detect_dialect("[TOOL_CALLS] ...").name == "mistral"
    assert detect_dialect("[TOOL_CALLS]{{ name }}[ARGS]").name == "mistral_v11"
    assert detect_dialect("<start_of_turn>model").name == "pythonic"
    assert detect_dialect("<|start|>assistant<|channel|>final").name == "harmony"
    assert detect_dialect("### Instruction:").name == "hermes"


def test_a_pythonic_prompt_warns_of_tools_it_cannot_call():
    tools = [{"type": "function", "function": {"name": "get-weather", "parameters": {"properties": {"city": {}}}}},
             {"type": "function", "function": {"name": "search", "parameters": {"properties": {"from": {}, "q": {}}}}}]
    assert uncallable_names(tools) == ["get-weather", "search(from)"]
    with pytest.warns(UncallableToolWarning, match=r"cannot call get-weather, search\(from\)"):
        dialect("pythonic").check_tools(tools)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dialect("hermes").check_tools(tools)  # its JSON names any string
        dialect("pythonic").check_tools([{"type": "function", "function": {"name": "search", "parameters": {
            "properties": {"query": {}}}}}])
