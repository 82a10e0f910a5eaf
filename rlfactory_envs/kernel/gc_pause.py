"""Pausing Python's automatic cyclic garbage collection for the length of a batch step.

A step of thousands of envs allocates hundreds of thousands of short-lived objects, which triggers full
collections of the whole heap in the middle of the step; on a 4096-env step they took more time than the step
itself. Pausing automatic collection for that bounded window moves the work to just after the step, where a
trainer is waiting on the GPU anyway. Nothing is kept: collection resumes as the last paused step ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def automatic_gc_paused(pause: bool = True) -> Iterator[None]:
    """Within the block, automatic collection is off (nested and concurrent blocks are counted)."""
    global _depth, _was_enabled
    if not pause:
        yield
        return
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
