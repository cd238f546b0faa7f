"""The install stamp of ``scripts/_bootstrap.sh`` and the ``tiny-hub`` on PATH that
``scripts/hub`` offers, in a temporary copy of the scripts whose ``.venv`` is a stand-in: its
``python`` and ``tiny-hub`` only write down how they were called, so the test sees exactly which
installs the bootstrap would run, in a second, with no network. Its home directory is a temporary
one too: nothing is written in the real one."""

from __future__ import annotations

import os
import pty
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STAND_IN = '#!/bin/sh\necho "$(basename "$0") $*" >> "$(dirname "$0")/../calls.log"\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("_bootstrap.sh", "_on_path.sh", "hub", "test"):
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


def environment(project: Path, **env: str) -> dict[str, str]:
    """The test's environment for the copy: its own cache and home, no tiny-hub on PATH."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TINY_HUB_")}
    clean["XDG_CACHE_HOME"] = str(project / "cache")
    clean["HOME"] = str(project / "home")
    clean["PATH"] = os.pathsep.join(
        part for part in clean["PATH"].split(os.pathsep) if not (Path(part) / "tiny-hub").exists()
    )
    return {**clean, **env}


def run(project: Path, script: str, *args: str, **env: str) -> list[str]:
    """Run ``scripts/<script>`` in the copy (no terminal: standard input is /dev/null); the
    stand-ins' calls it made, in order."""
    return calls(project, lambda: said_by(project, script, *args, **env))


def said_by(project: Path, script: str, *args: str, **env: str) -> str:
    """What ``scripts/<script>`` wrote to standard error, run without a terminal."""
    done = subprocess.run(
        ["bash", str(project / "scripts" / script), *args],
        env=environment(project, **env),
        check=True,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    return done.stderr


def calls(project: Path, action: Callable[[], object]) -> list[str]:
    log = project / ".venv" / "calls.log"
    log.unlink(missing_ok=True)
    action()
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


# --- tiny-hub on PATH ---------------------------------------------------------------------------


def on_a_terminal(project: Path, answer: bytes | None, *args: str, **env: str) -> str:
    """``scripts/hub`` on a pty, answering its question (if it asks) with ``answer``; what the
    terminal showed."""
    keys, terminal = pty.openpty()
    process = subprocess.Popen(
        ["bash", str(project / "scripts" / "hub"), *args],
        env=environment(project, **env),
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
    )
    os.close(terminal)
    shown = b""
    try:
        while True:
            try:
                chunk = os.read(keys, 4096)
            except OSError:  # the script ended and closed the terminal
                break
            if not chunk:
                break
            shown += chunk
            if b"[y/N] " in chunk and answer is not None:
                os.write(keys, answer)
    finally:
        assert process.wait(timeout=60) == 0
        os.close(keys)
    return shown.decode()


def link_of(project: Path) -> Path:
    return project / "home" / ".local" / "bin" / "tiny-hub"


def test_without_a_terminal_it_says_how_once_and_writes_nothing_outside(project: Path) -> None:
    said = said_by(project, "hub", "--help")
    assert f"ln -s {project}/scripts/hub {link_of(project)}" in said, said
    assert not (project / "home").exists(), "nothing written outside the checkout"
    assert "ln -s" not in said_by(project, "hub", "--help"), "said once"


def test_yes_links_tiny_hub_in_local_bin_and_the_link_runs_this_checkout(project: Path) -> None:
    shown = on_a_terminal(project, b"y\n", "--help")
    link = link_of(project)
    assert "Link" in shown and "[y/N]" in shown
    assert link.is_symlink() and link.resolve() == (project / "scripts" / "hub").resolve()
    assert "is not on your PATH yet" in shown, "it says what to add to PATH"
    log = calls(
        project,
        lambda: subprocess.run(
            [str(link), "doctor"], env=environment(project), check=True, capture_output=True
        ),
    )
    assert log == ["tiny-hub doctor"], "the link reaches this checkout's tiny-hub"
    on_path = {"PATH": f"{link.parent}{os.pathsep}{environment(project)['PATH']}"}
    (project / ".venv" / ".tiny-hub-path").unlink()  # even unasked before: it is on PATH now
    assert "[y/N]" not in on_a_terminal(project, None, "--help", **on_path)


def test_no_writes_nothing_and_is_not_asked_again(project: Path) -> None:
    shown = on_a_terminal(project, b"\n", "--help")
    assert "nothing written" in shown and not (project / "home").exists()
    assert "[y/N]" not in on_a_terminal(project, None, "--help"), "asked once"


def test_nothing_is_said_when_tiny_hub_already_reaches_this_checkout(project: Path) -> None:
    env = {"PATH": f"{project / '.venv' / 'bin'}{os.pathsep}{environment(project)['PATH']}"}
    said = said_by(project, "hub", "--help", **env)
    assert "PATH" not in said and "ln -s" not in said, said
    assert not (project / ".venv" / ".tiny-hub-path").exists()


def test_a_service_without_a_home_directory_is_offered_nothing(project: Path) -> None:
    said = said_by(project, "hub", "--help", HOME="")
    assert "PATH" not in said and "ln -s" not in said, said
    assert calls(project, lambda: said_by(project, "hub", "doctor", HOME="")) == ["tiny-hub doctor"]
