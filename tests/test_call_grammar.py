"""The call grammar: llama.cpp's own parser accepts what the hub builds, and its shape."""

from __future__ import annotations

import pytest
from llama_cpp.llama_grammar import LlamaGrammar

from hub.agent.runner import call_grammar
from hub.agent.runner.child import requested_grammar
from hub.agent.runner.protocol import FIELD_CONSTRAIN, FIELD_MUST_CALL, FIELD_TOOLS

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "learn",
            "description": "Store a fact.",
            "parameters": {
                "type": "object",
                "properties": {"fact": {"type": "string"}, "visibility": {"type": "string"}},
                "required": ["fact"],
            },
        },
    },
    {"type": "function", "function": {"name": "flipper_status", "description": "Battery."}},
]


def test_an_answer_or_a_call_to_each_offered_tool() -> None:
    grammar = call_grammar.grammar_for(TOOLS)
    LlamaGrammar.from_string(grammar, verbose=False)  # llama.cpp's parser accepts it
    assert grammar.startswith('root ::= "<tool_call>\\n" call "\\n</tool_call>" | answer')
    assert '"\\"learn\\""' in grammar and '"\\"flipper_status\\""' in grammar


def test_must_call_allows_that_tool_only() -> None:
    grammar = call_grammar.grammar_for(TOOLS, only="flipper_status")
    LlamaGrammar.from_string(grammar, verbose=False)
    assert "answer" not in grammar and "learn" not in grammar
    with pytest.raises(ValueError, match="no offered tool is called 'joke'"):
        call_grammar.grammar_for(TOOLS, only="joke")


def test_the_runner_builds_a_grammar_only_when_asked_and_never_fails_a_reply_over_it() -> None:
    assert requested_grammar({FIELD_TOOLS: TOOLS}) == ""
    assert "answer" in requested_grammar({FIELD_TOOLS: TOOLS, FIELD_CONSTRAIN: True})
    assert requested_grammar({FIELD_TOOLS: TOOLS, FIELD_MUST_CALL: "joke"}) == "", (
        "a grammar that cannot be built leaves the reply unconstrained"
    )
