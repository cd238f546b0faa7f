"""The conversation benchmark's judge, on hand-made transcripts (no hub, no model, no timing), its
two sets kept apart, and its control: one whole conversation on the fake Ollama scores 1.0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hub import contracts as c
from scripts.bench_agent_conversations import (
    CONVERSATIONS,
    TUNING_CONVERSATIONS,
    Conversation,
    History,
    record_of,
    rows_of,
    run_all,
    score_end,
    score_turn,
)


def text(delta: str) -> dict[str, Any]:
    return {"type": c.EV_BLOCK_DELTA, c.DELTA_TEXT: delta}


def tool(name: str, said: str, tool_input: Any = None, status: str = "success") -> list[Any]:
    use_id = f"t-{name}"
    return [
        {"type": c.EV_BLOCK_START, "toolStart": {"name": name, "toolUseId": use_id}},
        {
            "type": c.EV_BEFORE_TOOL,
            "toolCall": {"name": name, "toolUseId": use_id, "input": tool_input or {}},
        },
        {
            "type": c.EV_AFTER_TOOL,
            "toolResult": {
                "name": name,
                "toolUseId": use_id,
                "status": status,
                "content": [{"text": said}],
                "error": None,
            },
        },
    ]


STATUS = "Flipper Zero 'Unyana', firmware 1.4.3, battery 84.0% (discharging), USB."
MARA = CONVERSATIONS[0]


def turn_of(conversation: Conversation, starts: str) -> Any:
    return next(t for t in conversation.turns if t.say.startswith(starts))


def test_a_right_transcript_scores_right() -> None:
    again = turn_of(MARA, "check the flipper battery again")
    record = record_of(again, [*tool("flipper_status", STATUS), text("Your Flipper is at 84%.")])
    score = score_turn(record)
    assert score.right_action and score.answer_ok
    assert score.invented == () and score.claimed == ()

    remind = turn_of(MARA, "in half an hour, remind me")
    done = "Alert [j_1] 'Move the car' set for 10:45."
    said = text("I'll remind you to move the car.")
    record = record_of(remind, [*tool("schedule_alert", done), said])
    score = score_turn(record)
    assert score.right_action and score.answer_ok and score.claimed == ()


def test_an_old_reading_and_an_unbacked_claim_are_caught() -> None:
    again = turn_of(MARA, "check the flipper battery again")
    record = record_of(again, [text("It's still at 87%, as before.")])  # no tool called
    score = score_turn(record)
    assert not score.right_action and not score.answer_ok
    assert score.invented == ("87%",)

    # A level the emulator never gave, with no tool called (as a 1.5B model answered).
    first = turn_of(MARA, "how's the battery")
    said = text("The Flipper Zero's battery level is 80%.")
    assert score_turn(record_of(first, [said])).invented == ("80%",)

    # The tool read 84%, the answer repeats the earlier 87%: invented too.
    record = record_of(again, [*tool("flipper_status", STATUS), text("Still 87 percent.")])
    assert score_turn(record).invented == ("87 percent",)

    stated = turn_of(MARA, "my sister Lena")
    record = record_of(stated, [text("Lovely! I've saved that Lena visits on Saturday.")])
    score = score_turn(record)
    # No call is right for a fact stated without "remember" (memory listens after the reply,
    # and the end scores what it kept), but saying it was saved is a claim no result backs.
    assert score.right_action and score.answer_ok
    assert score.claimed == ("I've saved",)
    asked = turn_of(MARA, "remember that Lena")
    record = record_of(asked, [text("Lena is allergic to cats, noted.")])
    assert not score_turn(record).right_action, "asked to remember, the call is the action"

    # A failed tool does not back the claim either.
    failing = tool("learn", "memory is full", {"fact": "x"}, status="error")
    record = record_of(stated, [*failing, text("Saved it to your memory.")])
    assert score_turn(record).claimed == ("Saved it",)


def test_a_percentage_the_person_gave_is_no_reading() -> None:
    sums = turn_of(MARA, "what's 23% of 180")
    score = score_turn(record_of(sums, [text("23% of 180 is 41.4.")]))
    assert score.right_action and score.answer_ok and score.invented == ()


def test_a_refusal_claims_nothing_and_a_fake_unlock_is_caught() -> None:
    door = turn_of(MARA, "can you unlock")
    ok = score_turn(record_of(door, [text("Sorry, I can't unlock doors.")]))
    assert ok.right_action and ok.answer_ok and ok.claimed == ()
    bad = score_turn(record_of(door, [text("Done, the door is unlocked.")]))
    assert not bad.answer_ok and bad.claimed == ("unlocked",)


def test_the_end_of_a_conversation() -> None:
    right = [
        "The user's dog is called Biscuit.",
        "The user works as a pharmacist.",
        "The user's sister Lena is visiting on Sunday.",
        "Lena is allergic to cats.",
    ]
    pending = ["Vitamins Remind me: take my vitamins"]
    end = score_end(MARA, right, pending)
    assert all(end.facts_current) and len(end.facts_current) == 4  # 2 stated, 2 replaced
    assert all(end.one_fact_each) and all(end.kept) and end.reminders == (True,)

    wrong = [
        "The user's dog is called Biscuit.",
        "The user goes to the gym on Elm Street.",  # asked to forget
        "Lena visits on Saturday and is allergic to cats.",  # old, and two in one
    ]
    end = score_end(MARA, wrong, [])
    # Lena's allergy is there; her Sunday visit is not, the Saturday one and the gym still are.
    assert end.facts_current == (True, False, False, False)
    assert end.one_fact_each == (True, True)  # the dog's fact, the allergy's
    assert end.kept == (True, False)  # the dog, not the job
    assert end.reminders == (False,)


def test_two_facts_in_one_stored_fact_are_counted() -> None:
    stored = ["The user's dog is called Biscuit and they work as a pharmacist."]
    end = score_end(MARA, stored, [])
    assert end.one_fact_each.count(False) == 2


def test_the_history_plain_and_in_blocks() -> None:
    events = [
        text("Let me look."),
        *tool("flipper_status", STATUS),
        text("It is at 84%."),
        {"type": c.EV_AGENT_RESULT, "stopReason": "end_turn"},
    ]
    plain = History("plain")
    plain.user("battery?")
    assert plain.after_turn(events) == [
        {"role": "assistant", "content": "Let me look.\n\nIt is at 84%."}
    ]
    blocks = History()
    blocks.user("battery?")
    added = blocks.after_turn(events)
    assert added[0]["role"] == "assistant"
    [use] = added[0]["content"]
    assert use["toolUse"]["name"] == "flipper_status"
    [result] = added[1]["content"]
    assert added[1]["role"] == "user" and result["toolResult"]["content"] == [{"text": STATUS}]
    assert added[2]["role"] == "assistant" and len(blocks.messages) == 4


def test_the_sets_share_no_message_person_or_fact() -> None:
    assert len(CONVERSATIONS) >= 10 and len(TUNING_CONVERSATIONS) >= 6
    assert all(len(conv.turns) >= 8 for conv in (*CONVERSATIONS, *TUNING_CONVERSATIONS))

    def said(convs: tuple[Conversation, ...]) -> set[str]:
        return {t.say.lower() for conv in convs for t in conv.turns}

    def facts(convs: tuple[Conversation, ...]) -> set[str]:
        seeded = {f.text for conv in convs for f in conv.seeded}
        return seeded | {f.text for conv in convs for t in conv.turns for f in t.states}

    assert not said(CONVERSATIONS) & said(TUNING_CONVERSATIONS)
    assert not facts(CONVERSATIONS) & facts(TUNING_CONVERSATIONS)
    assert not {c.name for c in CONVERSATIONS} & {c.name for c in TUNING_CONVERSATIONS}


def test_every_conversation_has_the_whole_mix() -> None:
    for conv in (*CONVERSATIONS, *TUNING_CONVERSATIONS):
        turns = conv.turns
        battery = [t for t in turns if t.accepted[0] == "flipper_status"]
        assert len(battery) >= 2 and battery[-1].battery not in (None, 87), conv.name
        stated = [t for t in turns if t.states and not t.supersedes]
        assert any("remember" in t.say for t in stated), conv.name
        assert any("remember" not in t.say for t in stated), conv.name
        assert any(t.supersedes for t in turns) and any(t.forgets for t in turns), conv.name
        assert any(t.cancels for t in turns) and any(t.reminder for t in turns), conv.name
        assert any(t.accepted == ("", "recall") for t in turns), conv.name
        assert any("unable" in t.words for t in turns), conv.name  # a refusal
        for turn in turns:  # the control is scripted with an accepted call (or none)
            first = turn.control[0].tool if turn.control else ""
            assert first in turn.accepted, (conv.name, turn.say)


@pytest.mark.timeout(180)  # 15 turns in a hub with the emulator: ~20 s on 2 busy cores
async def test_the_control_scores_one_on_a_whole_conversation(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TINY_HUB_CONV_LIMIT", "1")
    monkeypatch.setenv("TINY_HUB_CONV_LOG_DIR", str(tmp_path))
    monkeypatch.delenv("TINY_HUB_EVAL_SET", raising=False)
    monkeypatch.delenv("TINY_HUB_CONV_HISTORY", raising=False)
    runs, reads, _ = await run_all("control")
    assert reads == [] and len(runs) == 1 and len(runs[0].records) == len(MARA.turns)
    rows = {name: value for name, value, _, _ in rows_of("control", runs, reads, 0)}
    shares = [
        v
        for name, v in rows.items()
        if not name.endswith(("_s_control", "_readings_control", "_acts_control"))
    ]
    assert shares and all(v == 1.0 for v in shares), rows
    assert rows["conversation_invented_readings_control"] == 0
    assert rows["conversation_claimed_acts_control"] == 0
    # The emulator's new level reached the second battery answer's tool result.
    again = next(r for r in runs[0].records if r.turn.battery == 84)
    assert "84" in again.results[0][2]
    assert MARA.turns[-1].say in logged(tmp_path)


def logged(folder: Path) -> str:
    (log,) = folder.glob("*-control-eval.log")
    return log.read_text()


def test_a_sum_is_right_worked_out_by_the_calculator_or_answered_directly() -> None:
    asked = turn_of(MARA, "what's 23% of 180")
    worked = [*tool("calculate", "23% of 180 = 41.4", {"expression": "23% of 180"})]
    assert score_turn(record_of(asked, [*worked, text("That's 41.4.")])).right_action
    assert score_turn(record_of(asked, [text("23% of 180 is 41.4.")])).right_action
    learned = [*tool("learn", "Saved.", {"fact": "x"})]
    assert not score_turn(record_of(asked, [*learned, text("41.4.")])).right_action
