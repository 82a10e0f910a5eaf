"""``rlf audit``: run known reward hacks against an env's reward and report how often each one earns reward.

``run_audit(env_id, n_tasks=50)`` plays the control (the env's reference answer, which must earn) and every hack
(the generic battery of ``hacks`` and the env's own, ``FamilyTooling.reward_hacks``) on the same tasks and returns an
``AuditReport`` (``table()``, ``to_dict()``, ``passed``). The contract a hack follows is
``rlfactory_envs.kernel.reward_hacks``.
"""

from rlfactory_envs.audit.battery import choose_hacks, env_battery
from rlfactory_envs.audit.hacks import control_hack, generic_hacks
from rlfactory_envs.audit.report import AuditReport, EpisodeExample, HackOutcome
from rlfactory_envs.audit.runner import arun_audit, audit_task_ids, run_audit

__all__ = ["AuditReport", "EpisodeExample", "HackOutcome", "arun_audit", "audit_task_ids", "choose_hacks",
           "control_hack", "env_battery", "generic_hacks", "run_audit"]
