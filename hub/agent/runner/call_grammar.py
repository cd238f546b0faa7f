"""The grammar that limits a small model's reply to an answer or one well-formed call.

A reply is either plain text (which may not begin like a call: ``<``, ``{``, a fence or a
bracket) or exactly ``<tool_call>\\n{"name": …, "arguments": …}\\n</tool_call>`` where the name
is one of the offered tools and the arguments follow that tool's JSON schema. With ``only``, the
reply must be a call to that one tool (the hub asks so when the model described a call in words
instead of making it).

The JSON part is written by llama.cpp's own converter from JSON schema to GBNF
(``llama_cpp.llama_grammar.SchemaConverter``); this module only joins the tools into one rule and
adds the answer branch. It runs in the runner, which already imports llama.cpp.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

CALL_OPEN = "<tool_call>\n"
CALL_CLOSE = "\n</tool_call>"
# Plain text that does not start the way a call, a fence or a JSON value starts.
ANSWER_RULE = "answer ::= [^<{`\\[ \\t\\n] [^\\x00]*"


# Keywords of an offered schema that only the grammar needs: the model is not shown them (a
# pattern is noise in every prompt; the grammar already holds the model to it).
GRAMMAR_ONLY = frozenset({"pattern"})


def shown(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The offered tools as the model is shown them: without :data:`GRAMMAR_ONLY` keywords in
    their arguments."""
    return [_shown_tool(tool) for tool in tools]


def _shown_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = tool.get("function", tool)
    parameters = dict(function.get("parameters") or {})
    properties = parameters.get("properties")
    if isinstance(properties, Mapping):
        parameters["properties"] = {
            name: {k: v for k, v in prop.items() if k not in GRAMMAR_ONLY}
            if isinstance(prop, Mapping)
            else prop
            for name, prop in properties.items()
        }
    shown_function = {**function, "parameters": parameters}
    return {**tool, "function": shown_function} if "function" in tool else shown_function


def call_schema(function: Mapping[str, Any]) -> dict[str, Any]:
    """One offered function as the JSON schema of a call to it."""
    parameters = dict(function.get("parameters") or {})
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    return {
        "type": "object",
        "properties": {"name": {"const": function["name"]}, "arguments": parameters},
        "required": ["name", "arguments"],
    }


def grammar_for(tools: Sequence[Mapping[str, Any]], only: str = "") -> str:
    """GBNF for a reply to ``tools`` (OpenAI function shape): an answer or one call; with
    ``only``, a call to that tool and nothing else."""
    from llama_cpp import llama_grammar

    functions = [t.get("function", t) for t in tools]
    if only:
        functions = [f for f in functions if f["name"] == only]
    if not functions:
        raise ValueError(f"no offered tool is called {only!r}" if only else "no tools offered")
    schemas = [call_schema(f) for f in functions]
    make: Any = llama_grammar.SchemaConverter  # untyped in llama-cpp-python
    converter = make(
        prop_order={"name": 0, "arguments": 1},
        allow_fetch=False,
        dotall=False,
        raw_pattern=False,
    )
    converter.visit(schemas[0] if len(schemas) == 1 else {"oneOf": schemas}, "call")
    call = f"{json.dumps(CALL_OPEN)} call {json.dumps(CALL_CLOSE)}"
    root = f"root ::= {call}" if only else f"root ::= {call} | answer\n{ANSWER_RULE}"
    return f"{root}\n{converter.format_grammar()}"
