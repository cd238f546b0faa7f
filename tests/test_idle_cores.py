"""The runner's thread count follows the cores other processes leave idle."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from hub.agent.runner import idle_cores
from hub.agent.runner.idle_cores import (
    IdleCores,
    Sample,
    default_threads,
    others_cores,
    physical_cores,
    read_sample,
    threads_for,
    usable_cpus,
)

SPIN = "while True: pass"
LOOKS_AT_MOST = 120  # the spinners may take a while to start on a loaded machine


def test_default_threads_leave_a_core_for_the_rest() -> None:
    assert default_threads(1) == 1
    assert default_threads(2) == 1
    assert default_threads(16) == 15


def test_a_core_counts_as_free_only_when_others_leave_it_nearly_idle() -> None:
    assert threads_for(0.0, 2) == 2
    assert threads_for(0.15, 2) == 2
    assert threads_for(0.3, 2) == 1, "a quarter-busy core would stall a worker"
    assert threads_for(1.0, 2) == 1
    assert threads_for(5.0, 2) == 1, "never fewer than one"
    assert threads_for(2.0, 8) == 6


def test_the_runners_own_work_does_not_count_as_others() -> None:
    before = Sample(busy_ticks=1000, own_ticks=100, wall_s=10.0)
    after = Sample(busy_ticks=1200, own_ticks=300, wall_s=11.0)  # all of it ours
    assert others_cores(before, after, 100.0) == 0.0
    other = Sample(busy_ticks=1300, own_ticks=300, wall_s=11.0)
    assert others_cores(before, other, 100.0) == pytest.approx(1.0)


def test_it_looks_again_only_after_a_window_long_enough_to_say_something() -> None:
    samples = iter(
        [
            Sample(0, 0, 0.0),
            Sample(10, 0, 0.1),  # too short a window: the count stands
            Sample(100, 0, 1.0),  # one core's worth of others over a second
            Sample(100, 0, 2.0),  # then nothing
        ]
    )
    cores = IdleCores(2, read=lambda: next(samples), ticks_per_s=100.0)
    assert cores.threads == 2
    assert cores.look() == 2
    assert cores.look() == 1
    assert cores.others == pytest.approx(1.0)
    assert cores.look() == 2


def test_proc_is_read_as_the_kernel_writes_it(tmp_path: Path) -> None:
    (tmp_path / "self").mkdir()
    (tmp_path / "stat").write_text("cpu  100 5 50 1000 20 3 2 7 0 0\ncpu0 1 2 3 4 5 6 7 8\n")
    own = "4242 (python3 (a) b) S 1 2 3 4 5 6 7 8 9 10 31 12 0 0 20 0 3 0 99\n"
    (tmp_path / "self" / "stat").write_text(own)
    sample = read_sample(str(tmp_path))
    assert sample.busy_ticks == 100 + 5 + 50 + 3 + 2 + 7
    assert sample.own_ticks == 31 + 12, "utime and stime, after a name with spaces and parens"


@pytest.mark.skipif(
    not Path("/proc/stat").exists(),
    reason="needs Linux's /proc/stat; the same choice is tested on fake /proc files and samples",
)
def test_a_process_spinning_on_each_core_leaves_one_thread(tmp_path: Path) -> None:
    """A real spinner per core: whatever else the machine runs, no core is left idle."""
    cores = IdleCores(usable_cpus())
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(usable_cpus())]
    try:
        threads = cores.threads
        for _ in range(LOOKS_AT_MOST):
            time.sleep(idle_cores.LOOK_EVERY_S)
            threads = cores.look()
            if cores.others >= usable_cpus() * 0.5:
                break
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    assert threads == 1
    assert cores.others >= usable_cpus() * 0.5


def test_two_hyperthreads_of_one_core_count_once(tmp_path: Path) -> None:
    for cpu, siblings in {0: "0,2", 1: "1,3", 2: "0,2", 3: "1,3", 4: "4"}.items():
        topology = tmp_path / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "thread_siblings_list").write_text(siblings + "\n")
    assert physical_cores({0, 1, 2, 3, 4}, str(tmp_path)) == 3
    assert physical_cores({0, 2}, str(tmp_path)) == 1
    assert physical_cores({7}, str(tmp_path)) == 1, "unreadable: the CPU counts on its own"
