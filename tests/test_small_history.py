"""What a small model is shown of a conversation: the turns before the message as one note that
says where each answer came from, bounded; this turn's call and result folded into the
question."""

from __future__ import annotations

from strands.types.content import Messages

from hub.agent.small import history
from hub.agent.small.history import HISTORY_HEADER, flatten_messages


def conversation(turns: int) -> Messages:
    """``turns`` earlier exchanges, each a battery question answered by a tool, then a new
    question."""
    messages: Messages = []
    for n in range(turns):
        use = {"toolUseId": f"t{n}", "name": "read_gauge", "input": {}}
        result = {"toolUseId": f"t{n}", "status": "success", "content": [{"text": f"{n} bar"}]}
        messages += [
            {"role": "user", "content": [{"text": f"what does the gauge say, round {n}?"}]},
            {"role": "assistant", "content": [{"toolUse": use}]},  # type: ignore[typeddict-item]
            {"role": "user", "content": [{"toolResult": result}]},  # type: ignore[typeddict-item]
            {"role": "assistant", "content": [{"text": f"It reads {n} bar."}]},
        ]
    return [*messages, {"role": "user", "content": [{"text": "and now?"}]}]


def test_earlier_turns_are_one_note_that_says_which_tool_gave_each_answer() -> None:
    flat = flatten_messages(conversation(1), "be kind")
    assert [m["role"] for m in flat] == ["system", "system", "user"], "the message stands alone"
    note = flat[1]["content"]
    assert note.startswith(HISTORY_HEADER)
    assert '- They said: "what does the gauge say, round 0?"' in note
    assert "- You called the tool read_gauge." in note
    assert '- The tool read_gauge returned: "0 bar"' in note
    assert note.endswith('- You answered: "It reads 0 bar."')
    assert "call the tool again" in note, "a reading from then is old"
    assert flat[-1] == {"role": "user", "content": "and now?"}


HI = '- They said: "hi"\n- You answered: "hello"'


def test_a_plain_text_history_still_reads_as_one_note() -> None:
    messages: Messages = [
        {"role": "user", "content": [{"text": "hi"}]},
        {"role": "assistant", "content": [{"text": "hello"}]},
        {"role": "user", "content": [{"text": "what's new?"}]},
    ]
    flat = flatten_messages(messages, None)
    assert flat == [
        {
            "role": "system",
            "content": f'{HISTORY_HEADER}\n- They said: "hi"\n- You answered: "hello"',
        },
        {"role": "user", "content": "what's new?"},
    ]


def test_a_long_history_loses_its_oldest_half_with_a_line_that_says_so() -> None:
    note = flatten_messages(conversation(60), None)[0]["content"]
    assert len(note) <= history.HISTORY_CHARS + len(HISTORY_HEADER) + 80
    assert "earlier lines not shown)" in note.splitlines()[len(HISTORY_HEADER.splitlines())]
    assert "round 59" in note and "round 0?" not in note, "the newest stay, the oldest go"


def test_the_note_grows_at_its_end_so_the_runner_reads_only_what_is_new() -> None:
    before = flatten_messages(conversation(3), "be kind")[1]["content"]
    after = flatten_messages(conversation(4), "be kind")[1]["content"]
    assert after.startswith(before)


def test_this_turns_result_joins_the_question_it_answers() -> None:
    messages = conversation(1)
    use = {"toolUseId": "now", "name": "read_gauge", "input": {}}
    result = {"toolUseId": "now", "status": "success", "content": [{"text": "2 bar"}]}
    messages += [
        {"role": "assistant", "content": [{"toolUse": use}]},  # type: ignore[typeddict-item]
        {"role": "user", "content": [{"toolResult": result}]},  # type: ignore[typeddict-item]
    ]
    flat = flatten_messages(messages, "be kind")
    asked = flat[-1]["content"]
    assert asked.startswith("and now?\n\nWhat the tool read_gauge returned: 2 bar")
    assert asked.endswith(history.ANSWER_FROM_RESULT)
    assert history.last_user_text(messages) == "and now?"


def test_the_hubs_own_cannot_is_not_shown_again() -> None:
    """Shown it, a small model answered the next requests with it."""
    from hub.agent.small.wording import CANNOT_DO

    messages: Messages = [
        {"role": "user", "content": [{"text": "open the front gate"}]},
        {"role": "assistant", "content": [{"text": CANNOT_DO}]},
        {"role": "user", "content": [{"text": "battery of the flipper now?"}]},
    ]
    note = flatten_messages(messages, None)[0]["content"]
    assert '- They said: "open the front gate"' in note and CANNOT_DO not in note
