"""How fast the command line answers.

- ``cli_version_s``: ``tiny-hub version`` as a process, start to exit (median of the runs);
- ``cli_help_s``: ``tiny-hub --help`` the same way;
- ``cli_doctor_s``: ``tiny-hub doctor`` the same way, in a fresh data dir with Ollama's port
  closed: every check looks (installed, answering, free) and none loads a model;
- ``cli_doctor_own_hub_s``: the same with this data dir's hub running on the port it checks
  (``tiny-hub serve`` beside it): the port line must say it is this data dir's hub;
- ``cli_doctor_model_s``: ``tiny-hub doctor --model``, which also imports every dependency and
  decodes a prompt with the embedded model: what the default leaves out.

Each run must exit as it should with its text (the doctor: every check's line, ending with the
port's, and the model's line a decode with ``--model``), or the benchmark fails.
"""

from __future__ import annotations

import contextlib
import re
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from scripts.bench_common import SCRIPT, BenchmarkFailed, Figure, hub_env

Answered = Callable[[subprocess.CompletedProcess[str]], bool]
MODEL_RUNS = 3
OWN_HUB = "this data dir's hub is running"


def said(expected: str) -> Answered:
    return lambda result: result.returncode == 0 and expected in result.stdout


def doctored(decoded: bool, port: str = "") -> Answered:
    """Every check printed (exit 0, or 1 when one FAILs), the last the port's (with ``port``,
    what it says); with ``--model`` the embedded model's line is a decode's figures."""

    def answered(result: subprocess.CompletedProcess[str]) -> bool:
        lines = result.stdout.splitlines()
        embedded = [line for line in lines if re.match(r"\w+\s+embedded model\s", line)]
        return (
            result.returncode in (0, 1)
            and bool(lines)
            and re.match(r"(OK|WARN)\s+port\s", lines[-1]) is not None
            and len(embedded) == 1
            and ("tok/s" in embedded[0]) == decoded
            and port in lines[-1]
        )

    return answered


def timed(args: list[str], answered: Answered, env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    result = subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL
    )
    elapsed = time.perf_counter() - started
    if not answered(result):
        raise BenchmarkFailed(
            f"tiny-hub {' '.join(args)}: exit {result.returncode}\n{result.stdout}{result.stderr}"
        )
    return elapsed


def bench_cli(runs: int) -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        env = hub_env(Path(tmp) / "home")
        env["TINY_HUB_PORT"] = "0"  # the port line is about this data dir, not a hub running here
        with own_hub(env) as port:
            own = ["doctor", "--host", "127.0.0.1", "--port", port]
            plan: list[tuple[str, list[str], Answered, dict[str, str] | None, int]] = [
                ("cli_version_s", ["version"], said("tiny-hub "), None, runs),
                ("cli_help_s", ["--help"], said("usage: tiny-hub"), None, runs),
                ("cli_doctor_s", ["doctor"], doctored(decoded=False), env, runs),
                ("cli_doctor_own_hub_s", own, doctored(False, OWN_HUB), env, runs),
                ("cli_doctor_model_s", ["doctor", "--model"], doctored(True), env, MODEL_RUNS),
            ]
            return [measured(*planned, port=port) for planned in plan]


def measured(
    name: str,
    args: list[str],
    answered: Answered,
    env: dict[str, str] | None,
    runs: int,
    port: str = "",
) -> Figure:
    timed(args, answered, env)  # the first run warms the page cache; not counted
    values = [timed(args, answered, env) for _ in range(runs)]
    shown = " ".join(args).replace(port, "<its port>") if port else " ".join(args)
    how = f"`tiny-hub {shown}` as a process, start to exit, {runs} runs"
    return Figure(name, statistics.median(values), "s", how, values)


@contextlib.contextmanager
def own_hub(env: dict[str, str]) -> Iterator[str]:
    """``tiny-hub serve`` on a free loopback port in the benchmark's data dir; its port."""
    process = subprocess.Popen(
        [str(SCRIPT), "serve", "--host", "127.0.0.1", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:  # what comes before the 'serving on' line is the command's
            match = re.search(r"serving on http://127\.0\.0\.1:(\d+)", line)
            if match:
                break
        else:
            raise BenchmarkFailed("the hub did not start: no 'serving on' line")
        yield match.group(1)
    finally:
        process.terminate()
        process.wait()
