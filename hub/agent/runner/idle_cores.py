"""How many threads llama.cpp may decode with right now: the cores no other process is using.

llama.cpp's workers wait for each other at every layer, spinning. When one of them loses its
core to another process, every token waits for the kernel to give it back: 2 threads on 2 cores
with one core busy decode about 20 times slower than 1 thread. On an idle machine the same 2
threads decode almost twice as fast as 1. So the runner does not fix its thread count: it
counts what the rest of the machine used since it last looked (the kernel's ``/proc/stat``
minus this process's own ``/proc/self/stat``) and uses the cores left, at least 1 and at most
the cores it may run on. It looks again while it decodes, so a process that starts spinning
mid-reply takes a core back within :data:`LOOK_EVERY_S`.

Linux only (it reads ``/proc``); elsewhere :func:`governor` gives a fixed count.

Written here because no library does this: ``psutil`` reports machine-wide or per-process use,
but the decision (and the subtraction of our own spinning workers) is ours either way, and two
small ``/proc`` reads keep the runner free of another native dependency.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

# How often the share is looked at again while decoding.
LOOK_EVERY_S = 0.5
# A window shorter than this says too little (a clock tick is 10 ms); the last figure stands.
SHORTEST_WINDOW_S = 0.2
# What other processes may use of a core before it no longer counts as free: a core that is
# 25% taken already makes a worker that waits on it stall every few tokens.
FREE_BELOW = 0.2


@dataclass(frozen=True)
class Sample:
    """Clock ticks since boot: all CPUs' busy time, this process's CPU time, and the wall."""

    busy_ticks: int
    own_ticks: int
    wall_s: float


def read_sample(proc: str = "/proc") -> Sample:
    with open(f"{proc}/stat", encoding="ascii") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    busy = sum(fields[:8]) - idle  # user nice system idle iowait irq softirq steal
    with open(f"{proc}/self/stat", encoding="ascii") as own:
        after_name = own.read().rsplit(")", 1)[1].split()
    own_ticks = int(after_name[11]) + int(after_name[12])  # utime, stime
    return Sample(busy, own_ticks, time.monotonic())


def others_cores(before: Sample, after: Sample, ticks_per_s: float) -> float:
    """Cores' worth of CPU the rest of the machine used between two samples."""
    seconds = after.wall_s - before.wall_s
    if seconds <= 0:
        return 0.0
    others = (after.busy_ticks - before.busy_ticks) - (after.own_ticks - before.own_ticks)
    return max(0.0, others / ticks_per_s / seconds)


def threads_for(others: float, cores: int) -> int:
    """The cores left when ``others`` cores' worth is taken, rounded down with slack."""
    return max(1, min(cores, int(cores - others + FREE_BELOW)))


class IdleCores:
    """Chooses a thread count from what the rest of the machine uses, looking at most every
    :data:`LOOK_EVERY_S`."""

    def __init__(
        self,
        cores: int,
        read: Callable[[], Sample] = read_sample,
        ticks_per_s: float | None = None,
    ) -> None:
        self.cores = max(1, cores)
        self._read = read
        self._ticks_per_s = ticks_per_s or float(os.sysconf("SC_CLK_TCK"))
        self._last = read()
        self.others = 0.0
        self.threads = self.cores

    def look(self) -> int:
        """The thread count to use now; the same as before when the window is too short."""
        now = self._read()
        if now.wall_s - self._last.wall_s < SHORTEST_WINDOW_S:
            return self.threads
        self.others = others_cores(self._last, now, self._ticks_per_s)
        self._last = now
        self.threads = threads_for(self.others, self.cores)
        return self.threads

    def due(self) -> bool:
        return time.monotonic() - self._last.wall_s >= LOOK_EVERY_S


def usable_cpus() -> int:
    """CPUs this process may run on (a container or taskset may allow fewer than exist)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def physical_cores(cpus: set[int] | None = None, sysfs: str = "/sys/devices/system/cpu") -> int:
    """The cores behind the CPUs this process may use: two hyperthreads of one core count once
    (llama.cpp's workers on both halves of a core decode slower than one). Where the topology
    cannot be read, every CPU counts."""
    try:
        usable = cpus if cpus is not None else set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return usable_cpus()
    siblings = set()
    for cpu in usable:
        try:
            with open(f"{sysfs}/cpu{cpu}/topology/thread_siblings_list", encoding="ascii") as f:
                siblings.add(f.read().strip())
        except OSError:
            siblings.add(f"cpu{cpu}")
    return max(1, len(siblings))


def default_threads(cpus: int | None = None) -> int:
    """The fixed count where the share cannot be read: one core left to everything else."""
    cpus = usable_cpus() if cpus is None else cpus
    return max(1, cpus - 1)


def governor(cores: int | None = None) -> IdleCores | None:
    """An :class:`IdleCores` where ``/proc`` can be read; None elsewhere (a fixed count)."""
    try:
        return IdleCores(physical_cores() if cores is None else cores)
    except (OSError, ValueError, IndexError):
        return None
