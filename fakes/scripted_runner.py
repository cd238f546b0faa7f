"""A model runner that speaks the real runner protocol (``hub.agent.runner.protocol``) with
scripted replies: the hub's side of the small-model tool protocol runs end to end — offer,
parse, check, strands' tool loop, the answer turn — without a model that calls tools.

``python -m fakes.scripted_runner SCRIPT.json``: the script holds ``replies`` (one per
generation, in order; "Done." once they run out) and ``log`` (a file that gets each generate
request as one JSON line, for the test to read back).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hub.agent.runner import protocol as p


def pieces(text: str, size: int = 8) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def main(script_path: str) -> int:
    script = json.loads(Path(script_path).read_text())
    replies: list[str] = list(script["replies"])
    log = Path(script["log"])
    out = sys.stdout.buffer
    out.write(p.encode({"ev": p.EV_READY, "model": "scripted", "load_s": 0.0, "threads": 1}))
    out.flush()
    for line in sys.stdin.buffer:
        request = p.decode(line)
        if request.get("op") != p.OP_GENERATE:
            continue
        with log.open("a") as record:
            record.write(json.dumps(request) + "\n")
        reply = replies.pop(0) if replies else "Done."
        rid = request["id"]
        for piece in pieces(reply):
            out.write(p.encode({"ev": p.EV_TEXT, "id": rid, "text": piece, "n": 1}))
        done = {"ev": p.EV_DONE, "id": rid, "stop": p.STOP_END, "prompt_tokens": 1}
        out.write(p.encode({**done, "completion_tokens": len(pieces(reply)), "seconds": 0.01}))
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
