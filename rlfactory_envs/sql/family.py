"""The NL2SQL family: answer a question with one SQLite query after exploring the task's database with the ``sql``
tool server; rewarded by execution."""

from pathlib import Path

from rlfactory_envs.kernel.families import BenchEntry, EnvEntry, Family

SAMPLE_DIR = Path(__file__).resolve().parent / "data"
SAMPLE_QUESTIONS_PATH = SAMPLE_DIR / "questions.json"
"""The embedded synthetic sample's questions (Spider layout plus BIRD's ``evidence``); see
``rlfactory_envs/sql/sample_data.py``."""
SAMPLE_DB_DIR = SAMPLE_DIR / "database"
"""The embedded synthetic sample's databases, in Spider's layout."""

FAMILY = Family(
    name="sql",
    environments={
        "rlf/NL2SQL-Spider-v0": EnvEntry("rlfactory_envs.sql.env:SqlEnv", {"dataset": "spider"},
                                         "text-to-SQL in Spider's layout, rewarded by execution"),
        "rlf/NL2SQL-BIRD-v0": EnvEntry("rlfactory_envs.sql.env:SqlEnv", {"dataset": "bird"},
                                       "text-to-SQL in BIRD's layout (evidence in the prompt)"),
    },
    env_vars={"data_path": "RLF_SQL_DATA", "db_dir": "RLF_SQL_DB_DIR"},
    serve_defaults={"sql": {"--db-dir": str(SAMPLE_DB_DIR)}},
    semantics="rlfactory_envs.sql.semantics:semantics_options",
    tooling="rlfactory_envs.sql.tooling:SqlTooling",
    benches={"sql": BenchEntry("rlfactory_envs.sql.bench:bench_sql"),
             "sql_hostile": BenchEntry("rlfactory_envs.sql.hostile_bench:bench_sql_hostile", default=False)},
)
