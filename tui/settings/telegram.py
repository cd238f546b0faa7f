"""The settings screen's Telegram section: the person's bot as ``GET /api/telegram`` describes it,
and the form that sets it up, allows a chat or disables it — the routes behind which the
companion's ``telegram`` tool keeps its rules (the token checked with Telegram before it is kept,
never shown again but masked)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Input, Label, Select, Static

from hub.client.http import HubClient, HubError
from tui.settings.forms import Answer, FormModal

NO_BOT = "no bot connected · t connects the one @BotFather made for you"


def bot_lines(bot: Answer) -> list[str]:
    """The bot in a few lines: who answers as which tiny, its state, the masked token, chats."""
    allowed = [str(c["chatId"]) for c in bot.get("chats", []) if c.get("allowed")]
    waiting = [
        f"{c['chatId']} ({c.get('title') or '?'})"
        for c in bot.get("chats", [])
        if not c.get("allowed")
    ]
    state = str(bot.get("state", "?")) + (f" — {bot['detail']}" if bot.get("detail") else "")
    lines = [
        f"{bot.get('bot') or 'the bot'} answers as {bot.get('tiny')}: {state}",
        f"token {bot.get('token')} · allowed chats: {', '.join(allowed) or 'none yet'}",
    ]
    if waiting:
        lines.append(f"refused chats (t to allow one): {', '.join(waiting[:5])}")
    return lines


@dataclass(frozen=True)
class TelegramDraft:
    token: str
    tiny: str
    allow: int | None
    answering: bool

    def setup(self) -> dict[str, Any]:
        return {"tiny": self.tiny, **({"token": self.token} if self.token else {})}


class TelegramForm(FormModal[TelegramDraft]):
    """The bot's token (hidden; blank keeps the one set), the tiny that answers, a chat to
    allow, and whether it answers at all."""

    def __init__(self, client: HubClient, bot: Answer | None, tiny: str) -> None:
        super().__init__(partial(saved_bot, client, bot))
        self.bot = bot
        self.tiny = str(bot.get("tiny")) if bot else tiny

    def compose(self) -> ComposeResult:
        kept = f"blank keeps {self.bot.get('token')}" if self.bot else "from @BotFather"
        with Vertical(id="form"):
            yield Label("Telegram bot", classes="title")
            with Horizontal(classes="row"):
                yield Label("token")
                yield Input(placeholder=kept, password=True, id="telegram-token", compact=True)
            with Horizontal(classes="row"):
                yield Label("tiny")
                yield Input(value=self.tiny, id="telegram-tiny", compact=True)
            with Horizontal(classes="row"):
                yield Label("allow chat")
                yield Input(
                    placeholder="optional: a refused chat's id", id="telegram-chat", compact=True
                )
            with Horizontal(classes="row"):
                yield Label("answering")
                yield Select(
                    [("yes: answer allowed chats", True), ("no: disable the bot", False)],
                    value=not self.bot or bool(self.bot.get("enabled")),
                    allow_blank=False,
                    id="telegram-answering",
                    compact=True,
                )
            yield Label(
                "The token is checked with Telegram before it is kept, and never shown again. "
                "Only chats you allow are answered.",
                classes="note",
            )
            yield Static("", id="error", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#telegram-token").focus()

    def draft(self) -> TelegramDraft:
        token = self.query_one("#telegram-token", Input).value.strip()
        tiny = self.query_one("#telegram-tiny", Input).value.strip()
        chat = self.query_one("#telegram-chat", Input).value.strip()
        answering = bool(self.query_one("#telegram-answering", Select).value)
        if not token and self.bot is None:
            raise ValueError("the bot token @BotFather sent, please")
        if chat and not chat.lstrip("-").isdigit():
            raise ValueError("a chat id is a whole number (a refused chat's notice names it)")
        return TelegramDraft(token, tiny, int(chat) if chat else None, answering)


async def saved_bot(client: HubClient, bot: Answer | None, draft: TelegramDraft) -> Answer:
    """Setup (a new token or tiny, or answering again), a chat allowed, the bot disabled: each
    the route the telegram tool's rules live behind. The last answer, with setup's sentence."""
    answer: Answer = {"bot": bot}
    unchanged = bot is not None and not draft.token and draft.tiny == bot.get("tiny")
    if draft.answering and not (unchanged and bot is not None and bot.get("enabled")):
        answer = await client.call("PUT", "/api/telegram", body=draft.setup())
    if draft.allow is not None:
        chat = {"chatId": draft.allow}
        answer = {**answer, "bot": await client.call("POST", "/api/telegram/chats", body=chat)}
    if not draft.answering:
        answer = {"bot": await client.call("POST", "/api/telegram/disable")}
    return answer


async def telegram_section(client: HubClient) -> tuple[Answer | None, list[str], bool]:
    """The bot (None when there is none), the section's lines, and whether they say a failure
    (no bot yet is no failure: the hub's 404)."""
    try:
        bot = await client.call("GET", "/api/telegram")
    except HubError as exc:
        return None, [NO_BOT if exc.status == 404 else str(exc)], exc.status != 404
    return bot, bot_lines(bot), False
