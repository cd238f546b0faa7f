"""What the small-model layer says: to the model (its guide, the note when no tool fits) and
to the person (when nothing here can do what they asked)."""

from __future__ import annotations

# Said in the system prompt, before the tools (the remembered facts follow them), when tools
# are offered: the same every turn. Without its last sentence the 1.5B answered "unlock the
# front door" with "The front door is unlocked." and made up Berlin's weather.
TOOLS_GUIDE = (
    "The hub's tools most related to the user's message are offered here. When what you "
    "remember about the user (listed below) already answers the message, answer from it. Call "
    "a tool only when the message needs one; otherwise answer in plain words: writing, "
    "recipes, explanations and small talk need no tool. You act on nothing outside this chat "
    "except through these tools: when the message asks you to do something none of them "
    "does, or for news of the world right now, say plainly that you can't do that here, and "
    "never that it is done."
)
# Said right before the message when the model's words named a tool but made no call.
NO_TOOL_FITS = (
    "No tool here does what this message asks. Answer it yourself in plain words, and do not "
    "name any tool or function; when you cannot do what it asks, say so."
)
# What the person reads when nothing offered does what they asked, and the model's words
# would have said it did.
CANNOT_DO = "I can't do that here: none of the tools I have does it."
