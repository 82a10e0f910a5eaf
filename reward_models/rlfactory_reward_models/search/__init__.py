"""The search family's reward: exact match against the golden answers (``qa_reward``)."""
