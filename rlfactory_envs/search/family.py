"""The search family: Search-R1 style open-domain QA over a passage corpus, with the ``search`` tool server."""

from pathlib import Path

from rlfactory_envs.kernel.families import BenchEntry, EnvEntry, Family

SAMPLE_DIR = Path(__file__).resolve().parent / "data"
SAMPLE_QUESTIONS_PATH = SAMPLE_DIR / "sample_questions.jsonl"
"""The embedded synthetic sample's questions (NQ-open jsonl layout); see ``rlfactory_envs/search/sample_data.py``."""
SAMPLE_CORPUS_PATH = SAMPLE_DIR / "sample_corpus.jsonl"
"""The embedded synthetic sample's passages (Search-R1 wiki-18 jsonl layout)."""

FAMILY = Family(
    name="search",
    environments={
        "rlf/Search-NQ-v0": EnvEntry("rlfactory_envs.search.env:SearchEnv", {"chat_format": "qwen3"},
                                     "open-domain QA (NQ-open), Qwen3/Hermes <tool_call> format"),
        "rlf/Search-NQ-SearchR1-v0": EnvEntry("rlfactory_envs.search.env:SearchEnv", {"chat_format": "search_r1"},
                                              "the same in Search-R1's <search>/<information>/<answer> protocol"),
    },
    env_vars={"data_path": "RLF_SEARCH_DATA", "corpus_path": "RLF_SEARCH_CORPUS"},
    serve_defaults={"search": {"--corpus": str(SAMPLE_CORPUS_PATH)}},
    semantics="rlfactory_envs.search.semantics:semantics_options",
    tooling="rlfactory_envs.search.tooling:SearchTooling",
    commands=("rlfactory_envs.search.index_command:COMMAND",),
    benches={"search": BenchEntry("rlfactory_envs.search.bench:bench_search"),
             "search_scale": BenchEntry("rlfactory_envs.search.scale_bench:bench_search_scale", default=False)},
)
