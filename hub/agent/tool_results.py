"""What a tool's result may carry out of the hub, checked once for every tool.

A result goes to the model (maybe a cloud one), into the conversation a person may archive or
share, and to the client's stream. So before any of that, in the after-tool hook of each turn:

- credentials in its text are redacted (``hub.core.redaction``): a bot token echoed back by an API,
  a key a web page printed;
- text that is not Unicode (a lone UTF-16 surrogate, which JSON can spell as ``"\\ud800"`` and
  no encoder can write) makes the result a tool error the model reads, instead of ending the
  whole turn when the result is sent on.
"""

from __future__ import annotations

import json
from typing import Any

from strands.types.tools import ToolResult

from hub.core.redaction import redact

NOT_UNICODE = (
    "the tool's result holds text that is not valid Unicode (a lone UTF-16 surrogate such as "
    "\\ud800), so it was dropped"
)


def outgoing_result(result: ToolResult) -> ToolResult:
    """``result`` ready to leave the hub: redacted, or a tool error when it is not text."""
    content = result.get("content") or []
    if not _writable(content):
        return {**result, "status": "error", "content": [{"text": NOT_UNICODE}]}
    return {**result, "content": [_redacted(block) for block in content]}


def _redacted(block: Any) -> Any:
    if not isinstance(block, dict):
        return block
    if isinstance(block.get("text"), str):
        return {**block, "text": redact(block["text"])}
    if "json" in block:
        return {**block, "json": redact(block["json"])}
    return block


def _writable(content: Any) -> bool:
    texts = [b for b in content if isinstance(b, dict) and ("text" in b or "json" in b)]
    try:
        json.dumps(texts, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
