"""``tiny-hub``: the hub with its terminal UI, or one of its subcommands.

Errors a person can fix (bad config, port in use, hub unreachable) are one line on stderr and
exit status 2; tracebacks are for bugs. The parser and the dispatch table import nothing heavy:
``--help`` and ``version`` answer before strands, Chroma or aiohttp are loaded; each command's
module is imported when that command runs.
"""

from hub.cli.main import main

__all__ = ["main"]
