"""The travel family: plan a trip with TravelPlanner's sandbox tools (the ``travel`` tool server), scored by the
benchmark's official commonsense and hard constraints."""

from pathlib import Path

from rlfactory_envs.kernel.families import BenchEntry, EnvEntry, Family

SAMPLE_DIR = Path(__file__).resolve().parent / "data" / "sample"
SAMPLE_DATABASE_DIR = SAMPLE_DIR / "database"
"""SYNTHETIC SAMPLE: a small fictional sandbox in TravelPlanner's database layout, flights included
(``database/flights/clean_Flights_2022.csv``); see ``rlfactory_envs/travel/sample_data.py``."""
SAMPLE_QUERIES_PATH = SAMPLE_DIR / "queries.jsonl"
"""The sample's queries, in TravelPlanner's row layout, at each level and trip length."""
SAMPLE_PLANS_PATH = SAMPLE_DIR / "reference_plans.jsonl"
"""A plan per sample query that meets every constraint, in the official submission format ``{idx, query, plan}``."""

FAMILY = Family(
    name="travel",
    environments={
        "rlf/Travel-v0": EnvEntry("rlfactory_envs.travel.env:TravelEnv", {},
                                  "TravelPlanner: gather with the sandbox tools, submit a plan, official constraints"),
    },
    env_vars={"data_path": "RLF_TRAVEL_DATA", "database_dir": "RLF_TRAVEL_DATABASE", "flights_path": "RLF_TRAVEL_FLIGHTS"},
    serve_defaults={"travel": {"--database-dir": str(SAMPLE_DATABASE_DIR)}},
    semantics="rlfactory_envs.travel.semantics:semantics_options",
    tooling="rlfactory_envs.travel.tooling:TravelTooling",
    commands=("rlfactory_envs.travel.eval_plans:COMMAND",),
    benches={"travel": BenchEntry("rlfactory_envs.travel.bench:bench_travel")},
)
