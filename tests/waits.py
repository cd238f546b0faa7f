"""Waiting for a condition in an async test: ``until`` and ``until_sync`` live in
``harness/waits.py``, where the benchmarks import them too."""

from __future__ import annotations

from harness.waits import STEP_S, until, until_sync

__all__ = ["STEP_S", "until", "until_sync"]
