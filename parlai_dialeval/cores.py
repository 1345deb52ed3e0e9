"""The CPU cores this process may run on: its affinity mask where the platform has one (a container or
``taskset`` gives fewer than the machine has), else the machine's count."""
from __future__ import annotations

import os


def usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
