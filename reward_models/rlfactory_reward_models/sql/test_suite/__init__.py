"""Generated test-suite databases for execution-match SQL rewards (Zhong, Yu and Klein, EMNLP 2020).

A query that matches the gold result on one database may still be wrong: a constant the model read with its tools
(``SELECT 6``), a dropped condition that filters nothing there, ``>`` for ``>=`` where no value sits on the
boundary. The defence is to require the match on many databases of the same schema with other contents.

- ``schema``: what a SQLite file declares (tables, keys, unique constraints) and the order to fill it in.
- ``profile``: each column's values as the original holds them, plus the gold queries' literals.
- ``fuzz``: one variant database from those profiles and a seed (types, NULL rates, keys kept).
- ``neighbours``: queries mutated from a gold query (a changed comparison, a dropped condition, ...).
- ``distill``: of many candidate variants, the few that tell the gold queries from their neighbours.
- ``suite``: the cached, indexed suites per database that ``SqlExecutionReward`` runs on.
"""

from rlfactory_reward_models.sql.test_suite.suite import GeneratedSuites, SuiteSettings

__all__ = ["GeneratedSuites", "SuiteSettings"]
