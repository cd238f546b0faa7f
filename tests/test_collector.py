"""The collector's pace in a hub's process: libraries loaded with it paused, then frozen out of
its passes, and a pass every 10,000 new objects."""

from __future__ import annotations

import argparse
import gc
import importlib

import pytest

from hub.cli.main import COMMANDS, main
from hub.core.collector import COLLECT_EVERY, settled

SEEN: dict[str, object] = {}


def record(args: argparse.Namespace) -> int:
    SEEN.update(enabled=gc.isenabled(), threshold=gc.get_threshold(), command=args.command)
    return 0


def test_a_command_runs_with_the_collector_on_at_the_hubs_pace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(COMMANDS, "discover", f"{__name__}:record")
    SEEN.clear()
    assert main(["discover"]) == 0
    assert SEEN == {"enabled": True, "threshold": COLLECT_EVERY, "command": "discover"}


def test_what_was_made_inside_leaves_the_passes_and_the_collector_is_on_after_an_error() -> None:
    with settled():
        assert not gc.isenabled()
        loaded = [[n] for n in range(100)]
    assert gc.isenabled() and gc.get_threshold() == COLLECT_EVERY
    assert not any(o is loaded for o in gc.get_objects()), "frozen objects are not walked"
    gc.disable()
    with pytest.raises(ImportError), settled():
        importlib.import_module("tests.no_such_module")
    assert gc.isenabled()
