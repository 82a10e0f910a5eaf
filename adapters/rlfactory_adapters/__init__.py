"""Trainer adapters (verl ``AgentLoopBase``, OpenRLHF agent file): token-in/token-out bookkeeping over rlf envs.

Each adapter lives in its own subpackage and imports its trainer only there; the core never imports a trainer.
"""
