"""Running episodes with a policy: the OpenAI-compatible chat client, scripted baselines, and the rollout loop."""
