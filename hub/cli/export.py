"""``tiny-hub export``: a conversation the terminal UI kept, as Markdown (the same document as
the TUI's export key). With no conversation named, the ones there are."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hub.cli.common import CliError, settings_of


def export_command(args: argparse.Namespace) -> int:
    from tui.config import TuiConfig
    from tui.conversations import ConversationStore, matching
    from tui.export import conversation_markdown

    settings = settings_of(args)
    store = ConversationStore(TuiConfig.load(settings.home / "tui").conversations_dir)
    conversations, _ = store.listing()
    if not args.conversation:
        for conversation in conversations:
            print(f"{conversation.id}  {conversation.updated}  {conversation.title}")
        if not conversations:
            print("no conversations yet (the terminal UI keeps them: tiny-hub)")
        return 0
    chosen = [c for c in conversations if c.id == args.conversation]
    chosen = chosen or matching(conversations, args.conversation)
    if not chosen:
        raise CliError(f"no conversation is {args.conversation!r} or mentions it")
    if len(chosen) > 1:
        names = ", ".join(f"{c.id} ({c.title})" for c in chosen[:5])
        raise CliError(f"{len(chosen)} conversations mention {args.conversation!r}: {names}")
    markdown = conversation_markdown(chosen[0])
    if args.out is None:
        sys.stdout.write(markdown)
        return 0
    out: Path = args.out
    try:
        out.write_text(markdown, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write {out}: {exc.strerror or exc}") from None
    print(f"wrote {out}")
    return 0
