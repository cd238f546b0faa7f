"""The words the hub and a sandbox child exchange: one JSON object per line, each way.

A request names its operation (``check`` a source, or ``run`` it on an input) and the limits it
runs under; an answer is ``{"ok": true, "value": ...}`` or ``{"ok": false, "kind": ..., "error":
...}``, where ``kind`` says which limit or rule stopped it. The child says ``{"ready": true}``
once its engine is up, so the hub knows when a start is over.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

OP_CHECK = "check"
OP_RUN = "run"

# What stopped a call: the model reads the error either way; the kind is for tests and logs.
KIND_TIME = "time"  # the CPU-time limit
KIND_MEMORY = "memory"  # the heap limit, or the process ceiling for buffers
KIND_THROWN = "thrown"  # the tool threw, or its source does not compile
KIND_SOURCE = "source"  # not one arrow function
KIND_RESULT = "result"  # the result is not JSON or too large
KIND_CRASH = "crash"  # the engine took the child process down

MAX_RESULT_CHARS = 65_536


@dataclass(frozen=True)
class FetchPolicy:
    """Where a tool's ``fetch`` may go. The hub's tools use the default: public HTTPS hosts,
    nothing on the home network, every address checked by the network guard."""

    schemes: tuple[str, ...] = ("https",)
    allow_hosts: tuple[str, ...] = ()
    timeout_s: float = 10.0
    max_bytes: int = 262_144
    max_calls: int = 10


@dataclass(frozen=True)
class Limits:
    """What one call may use: CPU seconds, V8 heap bytes, and wall seconds (fetches included)."""

    cpu_s: float = 2.0
    heap_bytes: int = 64 * 1024 * 1024
    wall_s: float = 30.0
    fetch: FetchPolicy = field(default_factory=FetchPolicy)


def request(op: str, source: str, limits: Limits, input: Any = None) -> dict[str, Any]:
    return {"op": op, "source": source, "input": input, "limits": asdict(limits)}


def limits_from(raw: dict[str, Any]) -> Limits:
    fetch = raw.get("fetch") or {}
    return Limits(
        cpu_s=float(raw["cpu_s"]),
        heap_bytes=int(raw["heap_bytes"]),
        wall_s=float(raw["wall_s"]),
        fetch=FetchPolicy(
            schemes=tuple(fetch.get("schemes", ("https",))),
            allow_hosts=tuple(fetch.get("allow_hosts", ())),
            timeout_s=float(fetch.get("timeout_s", 10.0)),
            max_bytes=int(fetch.get("max_bytes", 262_144)),
            max_calls=int(fetch.get("max_calls", 10)),
        ),
    )


def succeeded(value: Any) -> dict[str, Any]:
    return {"ok": True, "value": value}


def stopped(kind: str, error: str) -> dict[str, Any]:
    return {"ok": False, "kind": kind, "error": error}
