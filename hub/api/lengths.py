"""The longest string a caller or a device may hand the hub to keep, stated once.

Every string field of a JSON body that the device routes or a saved model choice store is held
to these tables before the route looks at it, so a device cannot park megabytes in ``lanUrl``
and have every device list serve them back. Fields with a rule of their own (capabilities, event
details, media) keep it beside the code that reads them; docs/security.md lists every limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from aiohttp import web

from hub.api.errors import http_error

MAX_TEXT: Final = 4000

# The device routes' bodies (hub/api/devices.py).
MAX_CHARS: Final[Mapping[str, int]] = {
    "name": 64,
    "kind": 32,
    "platform": 64,
    "url": 2048,
    "lanUrl": 2048,
    "secret": 512,
    "deviceId": 64,
    "token": 256,
    "contentType": 128,
    "taskId": 128,
    "inReplyTo": 128,
    "mediaId": 128,
    "idempotencyKey": 100,
    "prompt": MAX_TEXT,
    "text": MAX_TEXT,
    "summary": MAX_TEXT,
}

# A saved model choice (PUT /api/model).
MODEL_MAX_CHARS: Final[Mapping[str, int]] = {"id": 256, "baseUrl": 2048}


def check_lengths(body: Mapping[str, Any], table: Mapping[str, int] = MAX_CHARS) -> None:
    """A 400 naming the first field of ``body`` longer than ``table`` allows."""
    for key, cap in table.items():
        value = body.get(key)
        if isinstance(value, str) and len(value) > cap:
            raise http_error(
                web.HTTPBadRequest, f"{key} is longer than {cap} characters ({len(value)})"
            )
