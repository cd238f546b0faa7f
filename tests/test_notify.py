"""A notice reaches the ring and every dial-in device of its owner, and nobody else's."""

from __future__ import annotations

import json
from pathlib import Path

from hub.devices.endpoint import EndpointPolicy
from hub.devices.notify import NOTIFY_KIND, Notice, push_notice
from hub.devices.service import Devices
from hub.people.identity import Identity
from hub.store.migrations import open_database


def test_a_notice_reaches_the_ring_and_each_dial_in_device_of_its_owner(tmp_path: Path) -> None:
    db = open_database(tmp_path / "hub.db")
    people = Identity(db)
    alice, bob = people.add_user("alice", "owner"), people.add_user("bob")
    devices = Devices(db, tmp_path / "media", EndpointPolicy())
    phone = devices.registry.enroll(alice.id, name="phone", kind="daemon")[0]
    laptop = devices.registry.enroll(alice.id, name="laptop", kind="cli")[0]
    theirs = devices.registry.enroll(bob.id, name="bob-phone", kind="daemon")[0]
    devices.registry.enroll(
        alice.id,
        name="printer",
        kind="endpoint",
        url="https://printer.example",
        secret="printer-secret",
    )

    delivery = push_notice(devices, alice.id, Notice("Tea", "The kettle is done", tag="alert:1"))

    assert len(delivery.message_ids) == 2
    for device in (phone, laptop):
        (envelope,) = devices.mailbox.pull(device)
        assert json.loads(envelope.payload) == {
            "type": "notify",
            "title": "Tea",
            "body": "The kettle is done",
            "tag": "alert:1",
            "url": "",
        }
    assert devices.mailbox.pull(theirs) == []
    (event,) = devices.events.recent(alice.id)
    assert (event.kind, event.detail["title"]) == (NOTIFY_KIND, "Tea")
    assert devices.events.recent(bob.id) == []
