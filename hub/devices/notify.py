"""Telling a person something while they are not looking: one notice, every place they look.

A notice goes on the person's event ring (the TUI shows it as a toast, a phone's event stream
sees it) and, as a ``notify`` envelope ``{type, title, body, tag, url}``, into the mailbox of each
of their dial-in devices — the phones and laptops that pull, which show it as a notification and
answer ``{ok: true}``. A device offline now gets it at its next pull (or it is dead-lettered after
an hour, like any envelope). Scheduled jobs, alerts, finished tasks and direct messages all push
through here, so a notice is shaped and delivered one way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hub.devices.events import RingEvent
from hub.devices.service import Devices

NOTIFY_KIND = "notify"
TITLE_MAX = 120
BODY_MAX = 2000


@dataclass(frozen=True)
class Notice:
    title: str
    body: str
    tag: str = ""  # what the notice is about (``job:<id>``, ``alert:<id>``): a phone may
    # replace an earlier notification with the same tag
    url: str = ""

    def envelope(self) -> dict[str, Any]:
        return {
            "type": NOTIFY_KIND,
            "title": self.title[:TITLE_MAX],
            "body": self.body[:BODY_MAX],
            "tag": self.tag,
            "url": self.url,
        }


@dataclass(frozen=True)
class Delivery:
    event: RingEvent | None  # None when the news already has its own ring event
    message_ids: tuple[str, ...]  # one per dial-in device the envelope was queued for


def push_notice(
    devices: Devices,
    owner: str,
    notice: Notice,
    *,
    source: str | None = None,
    on_ring: bool = True,
) -> Delivery:
    """Publish ``notice`` on ``owner``'s ring and queue it for each of their dial-in devices,
    once each; not for ``source``, the id of the device the news came from (it knows). News
    that is on the ring already (a ``task_result``) passes ``on_ring=False``: one event, one
    push."""
    envelope = notice.envelope()
    event = devices.events.publish(owner, NOTIFY_KIND, None, envelope) if on_ring else None
    sent = tuple(
        devices.mailbox.send(device, envelope)
        for device in devices.registry.list(owner)
        if device.dial_in and device.id != source
    )
    return Delivery(event, sent)
