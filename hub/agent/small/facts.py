"""The facts a message states, as separate facts: asked of the small model under a grammar
that allows "none" or a few lines that each begin "The user", so three things said in one
sentence are kept as three facts, each forgettable alone."""

from __future__ import annotations

import json

NONE = "none"
FACTS_AT_MOST = 4
FACT_TOKENS = 120
FACT_LINES = (
    f'root ::= "{NONE}" | fact ("\\n" fact){{0,{FACTS_AT_MOST - 1}}}\n'
    'fact ::= "The user" [^\\n"]{3,160}'
)
QUESTION = (
    "Which lasting facts does this message state about its writer or the people in their "
    'life? Write each on its own line, beginning "The user"; write none when it states none.'
)
# Told in examples none of the evaluation's conversations hold.
EXAMPLES = (
    (
        "my brother Tom just moved to Lisbon, he loves it",
        "The user's brother is called Tom.\nThe user's brother Tom lives in Lisbon.",
    ),
    ("good morning! how are you?", NONE),
    ("what's the capital of Peru?", NONE),
    ("I'm a teacher now, I quit the bank", "The user works as a teacher."),
    (
        "my sister's party got moved, it's on Saturday now",
        "The user's sister's party is on Saturday.",
    ),
    ("set a timer for ten minutes", NONE),
    ("I'm starving right now", NONE),
    ("write me a poem about my cat", NONE),
)


def asking(message: str) -> list[dict[str, str]]:
    """The question once, then the examples and the message, as the yes/no checks ask
    (``checks.Confirmation``): on a tuning set it kept the facts it kept asked after every
    example, in half the time, and no longer took a reminder for a fact."""
    chat = [{"role": "system", "content": QUESTION}]
    for example, facts in EXAMPLES:
        chat += [
            {"role": "user", "content": shown(example)},
            {"role": "assistant", "content": facts},
        ]
    return [*chat, {"role": "user", "content": shown(message)}]


def shown(message: str) -> str:
    return f"Message: {json.dumps(message, ensure_ascii=False)}"


def stated(text: str) -> list[str]:
    """The facts the model wrote, each one line that begins "The user" ("none" for none)."""
    lines = [line.strip() for line in text.strip().splitlines()]
    return [line for line in lines if line.startswith("The user ") or line.startswith("The user'")][
        :FACTS_AT_MOST
    ]
