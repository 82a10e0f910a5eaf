"""A model judge as a reward: any OpenAI-compatible chat endpoint (vLLM, a hosted API) grades the final answer.

```python
from rlfactory_reward_models.judge import JudgeReward

judge = JudgeReward({"base_url": "http://127.0.0.1:8001/v1", "model": "Qwen/Qwen3-32B"}, default_template="qa")
reward = await judge.score(RewardInput(task, answer))   # reward.value in [0, 1], reward.parts == {"judge": ...}
```

Modules, one job each: ``config`` (the settings), ``templates`` (the prompts, and the answer put into one safely),
``fields`` (a task's template fields), ``verdict`` (a reply read as a score), ``cache`` (verdicts kept), ``client``
(the per-loop OpenAI clients, failures in words), ``reward`` (``JudgeReward``).
"""

from rlfactory_reward_models.judge.config import JudgeConfig, load_judge_config
from rlfactory_reward_models.judge.fields import default_fields
from rlfactory_reward_models.judge.reward import JudgeReward
from rlfactory_reward_models.judge.templates import TEMPLATES
from rlfactory_reward_models.judge.verdict import Verdict, parse_verdict

__all__ = ["TEMPLATES", "JudgeConfig", "JudgeReward", "Verdict", "default_fields", "load_judge_config",
           "parse_verdict"]
