"""Sending a message: find who ``to`` names, store it in their inbox, tell them, record the edge.

``to`` is ``@login`` (a person), or a tiny's name (its owner, the message noting the tiny); a
bare word that is no tiny is tried as a login. A private tiny the sender may not read is "not
found", so a message never reveals one.
"""

from __future__ import annotations

from dataclasses import dataclass

from hub.devices.notify import Notice, push_notice
from hub.messages.store import Inbox, Message, MessageRefused, NoSuchRecipient, check_text
from hub.people.identity import User
from hub.runtime.hub import Hub
from hub.tinys.records import TinyError
from hub.tinys.social import MESSAGED, record_social, user_node

PREVIEW_CHARS = 280


@dataclass(frozen=True)
class Recipient:
    user: User
    tiny: str = ""  # the tiny ``to`` named, when it named one


def find_recipient(hub: Hub, sender: User, to: str) -> Recipient:
    """The person ``to`` names; NoSuchRecipient when nobody, MessageRefused when it is you."""
    name = to.strip() if isinstance(to, str) else ""
    if not name.lstrip("@"):
        raise MessageRefused("say who the message is for: @login, or one of their tinys")
    found = _by_name(hub, sender, name)
    if found is None:
        raise NoSuchRecipient(f"nobody on this hub is {name} (a person's @login or a tiny)")
    if found.user.id == sender.id:
        raise MessageRefused("that is you: a message goes to someone else")
    return found


def _by_name(hub: Hub, sender: User, name: str) -> Recipient | None:
    if not name.startswith("@"):
        try:
            tiny = hub.tinys.resolve(name, sender, None)
        except TinyError:
            tiny = None
        if tiny is not None:
            return Recipient(hub.identity.user(tiny.owner_id), tiny.name)
    person = hub.identity.by_login(name) if len(name) <= 64 else None
    return Recipient(person) if person is not None else None


def send_message(hub: Hub, sender: User, to: str, text: str) -> Message:
    """Store the message in the recipient's inbox and push it to their phones and TUI."""
    body = check_text(text)
    recipient = find_recipient(hub, sender, to)
    message = Inbox(hub.db).add(sender.id, recipient.user.id, body, recipient.tiny)
    record_social(hub.db, user_node(sender.id), MESSAGED, user_node(recipient.user.id))
    push_notice(hub.devices, recipient.user.id, notice_for(message))
    return message


def notice_for(message: Message) -> Notice:
    via = f" (to your tiny {message.tiny})" if message.tiny else ""
    preview = message.text if len(message.text) <= PREVIEW_CHARS else message.text[:279] + "…"
    return Notice(
        title=f"Message from @{message.sender}{via}",
        body=preview,
        tag=f"message:{message.sender}",
    )


def peer(hub: Hub, login: str) -> User:
    """The person a conversation is with, by login; NoSuchRecipient when there is none."""
    person = hub.identity.by_login(login) if 0 < len(login) <= 64 else None
    if person is None:
        raise NoSuchRecipient(f"nobody on this hub is @{login.lstrip('@')}")
    return person
