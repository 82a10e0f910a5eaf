import gc
import threading

from rlfactory_envs.kernel.gc_pause import automatic_gc_paused


def test_collection_is_paused_inside_and_restored_after_nested_and_concurrent_blocks():
    assert gc.isenabled()
    inside = threading.Event()
    release = threading.Event()

    def other_batch():
        with automatic_gc_paused():
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=other_batch)
    with automatic_gc_paused():
        assert not gc.isenabled()
        with automatic_gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
        thread.start()
        inside.wait(5)
    assert not gc.isenabled()  # the other block is still running
    release.set()
    thread.join(5)
    assert gc.isenabled()


def test_no_pause_when_asked_not_to_and_a_disabled_collector_stays_disabled():
    with automatic_gc_paused(pause=False):
        assert gc.isenabled()
    gc.disable()
    try:
        with automatic_gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
