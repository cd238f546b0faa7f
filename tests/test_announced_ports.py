"""Ports announced by software boards: read while their emulator runs, never from a directory
another account could write to, and nothing a broken file says is believed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from drivers.base import PortInfo
from drivers.transports.announced import (
    NotPrivate,
    announce,
    announce_dir,
    announced_ports,
    withdraw,
)
from drivers.transports.serial import list_ports


@pytest.fixture(autouse=True)
def runtime_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    return tmp_path


def flipper_at(device: str) -> PortInfo:
    return PortInfo(
        device, 0x0483, 0x5740, "flip_Kitsune", "Flipper Devices Inc.", product="Flipper Kitsune"
    )


def test_an_announced_port_is_listed_until_withdrawn(tmp_path: Path) -> None:
    pty = tmp_path / "pty"
    pty.touch()
    announcement = announce(flipper_at(str(pty)))
    assert announced_ports() == [flipper_at(str(pty))]
    assert flipper_at(str(pty)) in list_ports()
    assert announce_dir().stat().st_mode & 0o777 == 0o700
    withdraw(announcement)
    assert announced_ports() == []


def test_a_port_whose_emulator_ended_or_whose_pty_went_is_not_listed(tmp_path: Path) -> None:
    pty = tmp_path / "pty"
    pty.touch()
    announcement = announce(flipper_at(str(pty)))
    pty.unlink()
    assert announced_ports() == []
    assert not announcement.exists()

    pty.touch()
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    record = {"device": str(pty), "vid": 0x0483, "pid": 0x5740, "process": int(ended.stdout)}
    (announce_dir() / "gone.json").write_text(json.dumps(record))
    assert announced_ports() == []


@pytest.mark.parametrize(
    "text",
    ["not json", "[]", '{"device": "/dev/null"}', '{"device": 5, "process": "x"}', "{}"],
)
def test_a_broken_announcement_is_skipped(text: str, tmp_path: Path) -> None:
    pty = tmp_path / "pty"
    pty.touch()
    announce(flipper_at(str(pty)))
    (announce_dir() / "broken.json").write_text(text)
    assert announced_ports() == [flipper_at(str(pty))]


def test_descriptor_fields_of_the_wrong_type_are_left_out(tmp_path: Path) -> None:
    pty = tmp_path / "pty"
    pty.touch()
    announce_dir().mkdir(parents=True)
    record = {"device": str(pty), "vid": "0483", "pid": True, "product": 7, "process": os.getpid()}
    (announce_dir() / "odd.json").write_text(json.dumps(record))
    assert announced_ports() == [PortInfo(str(pty))]


def test_a_directory_others_may_write_to_is_not_read(tmp_path: Path) -> None:
    pty = tmp_path / "pty"
    pty.touch()
    announce(flipper_at(str(pty)))
    announce_dir().chmod(0o777)
    assert announced_ports() == []
    announce_dir().chmod(0o700)
    announce_dir().parent.chmod(0o775)
    assert announced_ports() == []


def test_announcing_refuses_a_link_to_another_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A shared temp folder: another account made tiny-hub-<uid> a link to a folder of its own.
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    shared = tmp_path / "tmp"
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    theirs.chmod(0o755)
    (shared / f"tiny-hub-{os.getuid()}").symlink_to(theirs)
    pty = tmp_path / "pty"
    pty.touch()
    with pytest.raises(NotPrivate, match="symbolic link"):
        announce(flipper_at(str(pty)))
    assert theirs.stat().st_mode & 0o777 == 0o755
    assert list(theirs.iterdir()) == []
    assert announced_ports() == []


def test_announcing_refuses_a_folder_others_may_write_to(tmp_path: Path) -> None:
    pty = tmp_path / "pty"
    pty.touch()
    announce_dir().mkdir(parents=True)
    announce_dir().chmod(0o777)
    with pytest.raises(NotPrivate, match="written by other accounts"):
        announce(flipper_at(str(pty)))
    assert list(announce_dir().iterdir()) == []
    assert announce_dir().stat().st_mode & 0o777 == 0o777


def test_a_linked_announcement_file_is_not_read(tmp_path: Path) -> None:
    pty = tmp_path / "pty"
    pty.touch()
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"device": str(pty), "process": os.getpid()}))
    announce_dir().mkdir(parents=True)
    (announce_dir() / "linked.json").symlink_to(elsewhere)
    assert announced_ports() == []
    assert elsewhere.exists()
