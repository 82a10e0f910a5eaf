"""Chat formats read from real models' chat templates (Qwen3 from ../shared/data; Gemma 3, Llama 3 and DeepSeek-V3
from npm, .ci/tokenizers.sh): the observations are what the template renders after the model's turn, the episode's
text is the template's rendering of the episode, tools and system prompts are never dropped, and a template that is
not prefix-preserving is patched (Qwen3's) or refused in one line."""

from __future__ import annotations

import gymnasium as gym
import pytest

import rlfactory_envs  # noqa: F401 - registers the ids
from rlfactory_envs.kernel.chat_format import Qwen3ChatFormat
from rlfactory_envs.kernel.chat_template import chat_format_for, renderer, template_format
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.template_format import TemplateChatFormat
from rlfactory_envs.kernel.tool_call import ToolResult
from tests.conftest import shared_file, third_party_tokenizer

transformers = pytest.importorskip("transformers", reason="reading a tokenizer needs transformers (pip install .[test])")

SEARCH = {"type": "function", "function": {"name": "search", "description": "Search the corpus.",
                                           "parameters": {"type": "object", "properties": {"query": {"type": "string"}},
                                                          "required": ["query"]}}}


@pytest.fixture(scope="module")
def qwen3():
    return transformers.AutoTokenizer.from_pretrained(str(shared_file("tokenizers/qwen3/tokenizer.json").parent))


@pytest.fixture(scope="module", params=["qwen3", "gemma3", "llama3_1"])
def any_tokenizer(request):
    if request.param == "qwen3":
        return request.getfixturevalue("qwen3")
    return transformers.AutoTokenizer.from_pretrained(str(third_party_tokenizer(request.param)))


@pytest.fixture(scope="module")
def gemma3():
    return transformers.AutoTokenizer.from_pretrained(str(third_party_tokenizer("gemma3")))


TURNS = [  # (response, results, feedback): a tool turn, two calls at once, a feedback turn, results and feedback
    ("<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"a\"}}\n</tool_call>", ["Doc 1"], None),
    ("two<|im_end|>", ["Doc 2", "Doc 3"], None),
    ("nothing", [], "Your response contained neither a tool call nor a final answer."),
    ("more<|im_end|>\n", ["Doc 4"], "At most 1 call is run."),
]


@pytest.mark.parametrize("thinking", [True, False])
def test_qwen3s_own_template_gives_the_built_in_formats_observations_byte_for_byte(qwen3, thinking):
    template, built_in = template_format(qwen3, None, {"enable_thinking": thinking}), Qwen3ChatFormat(thinking)
    assert template.patched_template is not None  # Qwen3's drops earlier turns' reasoning: patched as TRL does
    for response, texts, feedback in TURNS:
        results = [ToolResult("search", text) for text in texts]
        assert template.observation(response, results, feedback) == built_in.observation(response, results, feedback)
    assert template.last_turn_markers[0] == built_in.assistant_header()


def test_the_episode_text_is_the_templates_rendering_of_the_episode(any_tokenizer):
    """prompt + response_1 + observation_1 + ... equals the template's rendering of the same conversation: the
    token-in/token-out bookkeeping a trainer keeps is the template's, turn after turn."""
    fmt = template_format(any_tokenizer)
    render = renderer(any_tokenizer, fmt.template_kwargs.get("chat_template") or any_tokenizer.chat_template)
    opening = fmt.prompt_messages([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Q?"}],
                                  [SEARCH])
    tools = [SEARCH] if fmt.shows_tool_schemas else None
    text, conversation = render(opening, tools, True), list(opening)
    for turn, (response, texts, feedback) in enumerate(TURNS, start=1):
        # as a model writes it: its reasoning first (Qwen3's template adds an empty block to a turn without one), and
        # no space around (Gemma's trims the model's own text)
        response = "<think>\nok\n</think>\n\n" + response.replace("<|im_end|>", "").strip()
        ids = [f"c{turn:04d}{i:04d}" for i in range(len(texts))]
        results = [ToolResult("search", t) for t in texts]
        text += response + fmt.observation(response, results, feedback, call_ids=ids)
        conversation += [{"role": "assistant", "content": response}] + fmt.turn_messages(results, feedback, ids)
        assert render(conversation, tools, True) == text


def test_gemma_3_gets_its_tools_and_system_prompt_in_the_first_turn_and_results_as_a_user_turn(gemma3):
    env = gym.make("rlf/Search-NQ-v0", chat_template=gemma3)
    try:
        _, info = env.reset(seed=0)
        fmt = env.unwrapped.chat_format
        assert fmt.dialect.name == "pythonic" and not fmt.shows_tool_schemas and info["tools"] == []
        rendered = gemma3.apply_chat_template(info["messages"], tokenize=False, add_generation_prompt=True)
        assert "Tools (functions) are available" in rendered and '"name": "search"' in rendered
        obs, *_ = env.step('[search(query="ysolde harn ombrecht rebels")]<end_of_turn>')
        assert obs.startswith("\n<start_of_turn>user\n<tool_response>\n") and obs.endswith("<start_of_turn>model\n")
        assert "<|im_" not in env.unwrapped.transcript + rendered  # no foreign markers
        assert env.unwrapped.messages[-1]["role"] == "tool" and env.unwrapped.messages[-2]["tool_calls"]
    finally:
        env.close()


def test_nothing_is_dropped_from_any_template(any_tokenizer):
    for tokenizer in (any_tokenizer,):
        fmt = template_format(tokenizer)
        messages = fmt.prompt_messages([{"role": "system", "content": "SYSTEM-7"}, {"role": "user", "content": "Q"}],
                                       [SEARCH])
        rendered = tokenizer.apply_chat_template(messages, tools=[SEARCH] if fmt.shows_tool_schemas else None,
                                                 tokenize=False, add_generation_prompt=True, **fmt.template_kwargs)
        assert "SYSTEM-7" in rendered and "Search the corpus." in rendered
        assert "RESULT-7" in fmt.observation("x", [ToolResult("search", "RESULT-7")], "FEEDBACK-7")
        assert "FEEDBACK-7" in fmt.observation("x", [ToolResult("search", "RESULT-7")], "FEEDBACK-7")


def test_a_template_that_is_not_prefix_preserving_is_refused_in_one_line(qwen3):
    marks_the_last_turn = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
                           "{% if loop.last and m.role == 'assistant' %} (latest){% endif %}<|im_end|>\n{% endfor %}"
                           "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    with pytest.raises(ConfigError, match=r"^the chat template is not prefix-preserving \(after a tool turn") as error:
        TemplateChatFormat(renderer(qwen3, marks_the_last_turn), marks_the_last_turn)
    assert "\n" not in str(error.value)


def test_a_template_whose_turns_depend_on_earlier_turns_is_refused(  ):
    """DeepSeek-V3's template opens the tool outputs only for the conversation's first tool turn."""
    deepseek = transformers.AutoTokenizer.from_pretrained(str(third_party_tokenizer("deepseek_v3")))
    with pytest.raises(ConfigError, match=r"\(a turn's results render differently after earlier turns\)"):
        template_format(deepseek)


def test_a_template_format_needs_a_template_and_names_are_checked():
    with pytest.raises(ConfigError, match="chat_format='gemma' reads the turns from the model's chat template: give "
                                          "chat_template="):
        gym.make("rlf/NL2SQL-Spider-v0", chat_format="gemma")
    with pytest.raises(ConfigError, match="unknown chat_format 'chatml'; choose one of qwen3, hermes, template"):
        chat_format_for("chatml")
    with pytest.raises(ConfigError, match="no tokenizer could be read there"):
        chat_format_for("template", "/nonexistent/tokenizer")
