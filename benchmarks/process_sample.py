"""What the soak (``benchmarks/soak.py``) samples of this process: RSS, open descriptors (on files and the others),
threads (outside worker pools, and the pools' workers), child processes and their RSS, CPU so far, objects tracked
by the collector."""

from __future__ import annotations

import concurrent.futures.thread
import gc
import os
import resource
import threading
import time

def rss_bytes(pid: int | str = "self") -> int:
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * resource.getpagesize()
    except (OSError, IndexError, ValueError):  # the process exited between the scan and the read
        return 0


def open_fds() -> tuple[int, int]:
    """Descriptors on regular files, and the others (pipes, sockets, event and epoll descriptors, devices)."""
    files = other = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed since the listing (the listing's own descriptor among them)
            continue
        if target.startswith("/") and not target.startswith("/dev/"):
            files += 1
        else:
            other += 1
    return files, other


def os_threads() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def pool_threads() -> int:
    """Live workers of thread pools (``ThreadPoolExecutor``, asyncio's default executor among them); the standard
    library lists every worker in ``concurrent.futures.thread._threads_queues``."""
    workers = getattr(concurrent.futures.thread, "_threads_queues", {})
    return sum(thread.is_alive() for thread in list(workers))


def thread_pools(objects: list[object]) -> tuple[int, int]:
    """Thread pools among ``objects`` (the collector's) not shut down, and their ceiling: the sum of their
    ``max_workers``."""
    pools = [o for o in objects
             if isinstance(o, concurrent.futures.ThreadPoolExecutor) and not getattr(o, "_shutdown", False)]
    return len(pools), sum(getattr(pool, "_max_workers", 0) for pool in pools)


def child_pids() -> list[int]:
    """Our child processes, zombies included (an unreaped server is a leak too)."""
    try:
        import psutil
    except ModuleNotFoundError:
        return _proc_children(os.getpid())
    return [child.pid for child in psutil.Process().children(recursive=False)]


def _proc_children(parent: int) -> list[int]:
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
        except (OSError, IndexError):
            continue
        if int(fields[1]) == parent:
            children.append(int(entry))
    return children


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process so far (0 when it has exited)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_so_far() -> float:
    """CPU seconds of this process and of its live children."""
    return time.process_time() + sum(cpu_seconds(pid) for pid in child_pids())


def sample_process() -> dict[str, int]:
    gc.collect()
    children = child_pids()
    file_fds, other_fds = open_fds()
    tracked = gc.get_objects()
    workers, (pools, ceiling) = pool_threads(), thread_pools(tracked)
    return {"rss_bytes": rss_bytes(), "fds": file_fds + other_fds, "file_fds": file_fds, "other_fds": other_fds,
            "threads": threading.active_count() - workers, "os_threads": os_threads() - workers,
            "thread_pools": pools, "pool_threads": workers, "pool_ceiling": ceiling, "children": len(children),
            "children_rss_bytes": sum(rss_bytes(pid) for pid in children), "gc_objects": len(tracked)}
