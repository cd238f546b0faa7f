"""What a small on-device model is shown of a conversation.

Strands' messages become chat-template messages whose content is one string, in the order that
lets the runner keep what it read (``runner/prefix_cache.py``): the system prompt (the template
renders the tools right after it), the person's remembered facts (they change rarely), the
conversation so far, and what this message brings (memories that match it, related tinys) as
a system message right before it.

The conversation so far is one note, not the turns themselves: shown a history of replies in
words, a small model imitates it and answers the next device question from what it said before
(measured: in one conversation of 13 messages the 1.5B called no tool and made up a battery
level). In the note it reads what each earlier answer came from — the tool called and what it
returned — and that a reading from then is old. The note is bounded: past its size the oldest
half goes, with a line that says so; the message being answered is never cut. This turn's call
and result are folded into the question they answer, with the ask to answer from the result:
small models ground an answer on a result in the person's own message far better than on a
turn of its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from strands.types.content import Message, Messages

from hub.agent.prompt import for_the_answer
from hub.agent.small.wording import CANNOT_DO

RESULT_CHARS = 1500
# Of each earlier message, in the note: enough for what it said, not for a story.
EARLIER_CHARS = 160
# The note's size (about 300 tokens): past it the oldest half of its lines goes. A message about
# another family of tools than the one before meets other tools before the note, so the runner
# reads the note again: measured in a conversation of 15 turns on 2 cores, a note of ~600
# tokens made such a turn 10 s longer.
HISTORY_CHARS = 1200
HISTORY_HEADER = (
    "## Earlier in this conversation\n"
    "What was said and done before the message you answer now. A reading or a list from then "
    "may have changed: to tell it again, call the tool again."
)
CALLED = "(I called the tool "
# Spoken to the person: told only to answer from the result, the 1.5B wrote about "the user"
# ("The tool learned that the user's sister is called Ana").
ANSWER_FROM_RESULT = (
    "Answer me in one short sentence from this result, quoting its numbers and names and "
    'speaking to me as "you".'
)
# After a call that failed for its arguments: a small model fills every argument and mixes
# their forms ("every": "*/25" for "in 25 minutes"); told why, it calls again or answers.
RETRY_AFTER_ERROR = (
    "That call failed. If my message still needs the tool, call it again with arguments that "
    "fix what the result says; otherwise answer me in one short sentence."
)


def result_text(result: Mapping[str, Any]) -> str:
    """A tool result as one plain string: its text, which the tool writes for the model; its
    JSON (written for clients: ids, timestamps, every field) only when there is no text. The
    small model reads every token of it, and answers better from the sentence."""
    content = result.get("content", [])
    parts = [str(item["text"]) for item in content if "text" in item]
    if not any(p.strip() for p in parts):
        parts = [
            json.dumps(item["json"], ensure_ascii=False, default=str)
            for item in content
            if "json" in item
        ]
    text = " ".join(parts).strip() or str(result.get("status", ""))
    return text[:RESULT_CHARS]


@dataclass
class _Names:
    """Tool names by toolUseId, as the calls go by (a result names only the id)."""

    by_id: dict[str, str]

    def called(self, use: Mapping[str, Any]) -> str:
        self.by_id[str(use.get("toolUseId", ""))] = str(use.get("name", ""))
        return str(use.get("name", ""))

    def of(self, result: Mapping[str, Any]) -> str:
        return self.by_id.get(str(result.get("toolUseId", "")), "the tool")


def block_text(block: Mapping[str, Any], names: _Names) -> str:
    if "text" in block:
        return str(block["text"])
    if "toolUse" in block:
        use = block["toolUse"]
        arguments = json.dumps(use.get("input", {}), ensure_ascii=False)
        return f"{CALLED}{names.called(use)} with {arguments}.)"
    if "toolResult" in block:
        result = block["toolResult"]
        return f"What the tool {names.of(result)} returned: {for_the_answer(result_text(result))}"
    return ""


def flatten_messages(
    messages: Messages, system_prompt: str | None, lasting_note: str = "", turn_note: str = ""
) -> list[dict[str, str]]:
    """Strands messages → chat-template messages whose content is one string (see the module's
    docstring for the order)."""
    flat: list[dict[str, str]] = []
    if system_prompt:
        flat.append({"role": "system", "content": system_prompt})
    if lasting_note:
        flat.append({"role": "system", "content": lasting_note})
    start = current_start(messages)
    names = _Names({})
    earlier = history_note(messages[:start], names)
    if earlier:
        flat.append({"role": "system", "content": earlier})
    flat += current_turn(messages[start:], names)
    if turn_note and flat and flat[-1]["role"] == "user":
        flat.insert(len(flat) - 1, {"role": "system", "content": turn_note})
    return flat


def current_start(messages: Messages) -> int:
    """Where the turn being answered begins: the person's last message in words."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message["role"] == "user" and any("text" in b for b in message["content"]):
            return index
    return 0


def current_turn(messages: Messages, names: _Names) -> list[dict[str, str]]:
    """The message being answered, with this turn's call and result folded into it."""
    flat: list[dict[str, str]] = []
    called = False  # the message before ended with a call
    for message in messages:
        parts = [block_text(block, names) for block in message["content"]]
        content = "\n".join(p for p in parts if p)
        results = all("toolResult" in b for b in message["content"]) and message["content"]
        if results and len(flat) >= 2 and called:
            flat.pop()  # the call (and any words before it) becomes the question's answer
            if flat[-1]["role"] == "user":
                question = flat.pop()["content"]
                ask = RETRY_AFTER_ERROR if first_failed(messages) else ANSWER_FROM_RESULT
                content = f"{question}\n\n{content}\n\n{ask}"
        flat.append({"role": message["role"], "content": content})
        called = bool(message["content"]) and "toolUse" in message["content"][-1]
    return flat


def tool_results(messages: Messages) -> list[Mapping[str, Any]]:
    return [b["toolResult"] for m in messages for b in m["content"] if "toolResult" in b]


def first_failed(messages: Messages) -> bool:
    """Whether this turn's one result so far is a failure: the model may call again, once."""
    results = tool_results(messages[current_start(messages) :])
    return len(results) == 1 and results[0].get("status") == "error"


def history_note(messages: Messages, names: _Names) -> str:
    """The earlier turns as one bounded note, or "" when there were none."""
    lines: list[str] = []
    dropped = 0
    for message in messages:
        for line in earlier_lines(message, names):
            lines.append(line)
            if sum(len(x) + 1 for x in lines) > HISTORY_CHARS:
                half = len(lines) // 2 or 1
                dropped += half
                lines = lines[half:]
    if not lines:
        return ""
    gone = [f"- ({dropped} earlier lines not shown)"] if dropped else []
    return "\n".join([HISTORY_HEADER, *gone, *lines])


def earlier_lines(message: Message, names: _Names) -> list[str]:
    """One line for each block of an earlier message that says something. The hub's own
    "cannot" is not among them: shown it, the 1.5B answered the next requests with it, a
    question its tools answer included."""
    lines = []
    for block in message["content"]:
        text = str(block["text"]).strip() if "text" in block else ""
        if text and text != CANNOT_DO:
            who = "They said" if message["role"] == "user" else "You answered"
            lines.append(f"- {who}: {quoted(text)}")
        elif "toolUse" in block:
            lines.append(f"- You called the tool {names.called(block['toolUse'])}.")
        elif "toolResult" in block:
            result = block["toolResult"]
            said = for_the_answer(result_text(result))
            lines.append(f"- The tool {names.of(result)} returned: {quoted(said)}")
    return lines


def quoted(text: str) -> str:
    flat = " ".join(text.split())
    cut = flat if len(flat) <= EARLIER_CHARS else flat[: EARLIER_CHARS - 1] + "…"
    return json.dumps(cut, ensure_ascii=False)


def after_tool_result(messages: Messages) -> bool:
    return bool(messages) and any("toolResult" in b for b in messages[-1]["content"])


def last_user_text(messages: Messages) -> str:
    message = messages[current_start(messages)] if messages else None
    if message is None or message["role"] != "user":
        return ""
    return " ".join(str(b["text"]) for b in message["content"] if "text" in b)


def earlier_user_text(messages: Messages) -> str:
    """What the person said in words before the message being answered ("" at the start)."""
    return last_user_text(messages[: current_start(messages)])
