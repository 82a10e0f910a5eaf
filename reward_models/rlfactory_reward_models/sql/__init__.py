"""The NL2SQL family's reward: execution match (``execution``, Spider and BIRD comparison in ``compare``), checked on
test-suite databases (``test_suite``)."""
