"""A conversation as Markdown: what the TUI's export key writes, and what a command-line export
can reuse (a pure function of the conversation: no screen, no hub, no clock).

Each message becomes a heading with who spoke and the message as it was written: replies are
already Markdown, and what the person typed is kept as typed.
"""

from __future__ import annotations

from tui.conversations import Conversation, message_text

SPEAKERS = {"user": "You", "assistant": "Companion", "system": "System"}


def conversation_markdown(conversation: Conversation) -> str:
    """``conversation`` as one Markdown document: its title, when it started and was last
    saved, then every message under its speaker."""
    lines = [f"# {conversation.title}", ""]
    lines += [f"_Started {conversation.created}, saved {conversation.updated}._", ""]
    for message in conversation.messages:
        speaker = SPEAKERS.get(str(message.get("role")), str(message.get("role")))
        lines += [f"## {speaker}", "", message_text(message).strip(), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def export_name(conversation: Conversation) -> str:
    """The file name an export gets: the conversation's id, which is safe in any file system."""
    return f"conversation-{conversation.id}.md"
