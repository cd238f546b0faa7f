"""The install stamp of ``scripts/_bootstrap.sh``, in a temporary copy of the scripts whose
``.venv`` is a stand-in: its ``python`` and ``tiny-hub`` only write down how they were called, so
the test sees exactly which installs the bootstrap would run, in a second, with no network."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STAND_IN = '#!/bin/sh\necho "$(basename "$0") $*" >> "$(dirname "$0")/../calls.log"\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("_bootstrap.sh", "hub", "test"):
        (tmp_path / "scripts").mkdir(exist_ok=True)
        shutil.copy(ROOT / "scripts" / name, tmp_path / "scripts" / name)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copy(ROOT / "constraints.txt", tmp_path / "constraints.txt")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("python", "tiny-hub", "ruff", "mypy"):
        (bin_dir / tool).write_text(STAND_IN)
        (bin_dir / tool).chmod(stat.S_IRWXU)
    return tmp_path


def run(project: Path, script: str, *args: str, **env: str) -> list[str]:
    """Run ``scripts/<script>`` in the copy; the stand-ins' calls it made, in order."""
    log = project / ".venv" / "calls.log"
    log.unlink(missing_ok=True)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TINY_HUB_")}
    clean["XDG_CACHE_HOME"] = str(project / "cache")
    subprocess.run(
        ["bash", str(project / "scripts" / script), *args],
        env={**clean, **env},
        check=True,
        capture_output=True,
        text=True,
    )
    return log.read_text().splitlines() if log.exists() else []


def installs(calls: list[str]) -> list[str]:
    return [c for c in calls if c.startswith(("python -m pip install", "python -m pip wheel"))]


def compiles(calls: list[str]) -> list[str]:
    return [c for c in calls if c.startswith("python -m pip wheel") and "llama-cpp-python" in c]


def test_test_then_hub_installs_nothing_the_second_time(project: Path) -> None:
    first = installs(run(project, "test"))
    assert len(compiles(first)) == 1 and "--no-cache-dir" in compiles(first)[0]
    assert any(c.endswith(f"-e {project}[dev]") for c in first)
    assert installs(run(project, "hub", "--help")) == [], "scripts/hub reinstalled"
    assert installs(run(project, "test")) == [], "scripts/test reinstalled"
    stamp = (project / ".venv" / ".tiny-hub-installed").read_text()
    assert "extras dev\n" in stamp and "-DGGML_NATIVE=OFF" in stamp


def test_a_changed_dependency_reinstalls_with_every_extra_kept(project: Path) -> None:
    run(project, "test")
    with (project / "constraints.txt").open("a") as constraints:
        constraints.write("\n# changed\n")
    again = installs(run(project, "hub", "--help"))
    assert any(c.endswith(f"-e {project}[dev]") for c in again), again
    assert not any("llama" in c for c in again), "llama.cpp's build did not change"


def test_other_llama_flags_rebuild_llama_once(project: Path) -> None:
    run(project, "hub", "--help")
    native = {"TINY_HUB_LLAMA_CMAKE_ARGS": "-DGGML_NATIVE=ON"}
    rebuilt = installs(run(project, "hub", "--help", **native))
    assert len(compiles(rebuilt)) == 1
    assert installs(run(project, "hub", "--help", **native)) == []


def test_a_wheel_built_with_the_same_flags_is_installed_not_compiled(project: Path) -> None:
    run(project, "hub", "--help")
    kept = next((project / "cache" / "tiny-hub").glob("llama-cpp-python-*"))
    (kept / "llama_cpp_python-0.3.36-cp311-cp311-linux_x86_64.whl").write_bytes(b"a wheel")
    (project / ".venv" / ".tiny-hub-installed").unlink()  # a new venv on this machine
    again = installs(run(project, "hub", "--help"))
    assert compiles(again) == []
    assert any(str(kept) in c and c.endswith(".whl") for c in again), again


def test_an_extra_asked_for_is_added(project: Path) -> None:
    run(project, "hub", "--help")
    added = installs(run(project, "hub", "--help", TINY_HUB_EXTRAS="anthropic"))
    assert any(c.endswith(f"-e {project}[anthropic]") for c in added), added
    both = installs(run(project, "test"))
    assert any(c.endswith(f"-e {project}[anthropic,dev]") for c in both), both
