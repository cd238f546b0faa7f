"""A conversation as Markdown: what the TUI's export key writes, and what a command-line export
can reuse (a pure function of the conversation: no screen, no hub, no clock).

Each message becomes a heading with who spoke and the message as it was written: replies are
already Markdown, and what the person typed is kept as typed. The tool calls and results the
conversation keeps for the model are one line under the reply they led to: which tools ran.
"""

from __future__ import annotations

from hub.client.conversation import readable, tools_line
from tui.conversations import Conversation

SPEAKERS = {"user": "You", "assistant": "Companion", "system": "System"}


def conversation_markdown(conversation: Conversation) -> str:
    """``conversation`` as one Markdown document: its title, when it started and was last
    saved, then every message under its speaker."""
    lines = [f"# {conversation.title}", ""]
    lines += [f"_Started {conversation.created}, saved {conversation.updated}._", ""]
    for said in readable(conversation.messages):
        lines += [f"## {SPEAKERS.get(said.role, said.role)}", ""]
        if said.tools:
            lines += [f"_{tools_line(said.tools)}_", ""]
        if said.text.strip():
            lines += [said.text.strip(), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def export_name(conversation: Conversation) -> str:
    """The file name an export gets: the conversation's id, which is safe in any file system."""
    return f"conversation-{conversation.id}.md"
