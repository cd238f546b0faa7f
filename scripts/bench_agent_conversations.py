"""The offline agent through whole conversations: days of ordinary use at a desk companion, each
sent through ``POST /api/chat`` exactly as the TUI sends it (the whole conversation every turn,
with the TUI's headers), in a hub whose Flipper is the emulator on a pty (as ``offline_agent``'s,
``scripts.bench_agent_eval.eval_hub``) and whose jobs and alerts work.

Each conversation (``CONVERSATIONS``: 10 of 15 turns) starts from an empty memory and no jobs;
its seeded facts are stored first through ``POST /learnings``. Its turns mix device questions
(the battery asked twice, the emulator's level changed between the two, so the second answer
must come from a new reading), facts the person states with and without "remember", a
correction that supersedes one of them, a forget (confirmed as the person would in their app),
a question memory answers, reminders and their cancelling (confirmed too), writing, arithmetic,
small talk and something the hub cannot do.

Scored per turn (``score_turn``): the right action (the first tool called is one the turn
accepts, or nothing was called where it accepts none); the answer (not empty, no raw call, one
of the turn's words in it); invented readings (a battery level or the firmware version in an
answer that no device-tool result of that turn says, an earlier reading repeated included);
claimed acts without their result ("saved", "forgotten", "scheduled", "beeped"... with no
successful result of a matching tool in that turn; ``CLAIMS`` is the judge's list, not the
product's). Scored at the end of each conversation (``score_end``) through ``GET /learnings``
and ``GET /api/jobs``: the stated facts current (each one's key words in one current fact;
each superseded or forgotten one no longer so), one fact each (no stored fact holding the key
words of two expected facts), a pending job or alert for every reminder asked after the last
cancel, and nothing forgotten that was not asked (the seeded facts left alone still current).

Timing: each turn's wall time, and the first visible token (sent → the first text delta).
Calibration, in the same run and through the same runner: the seconds llama.cpp takes to read
1,000 fresh prompt tokens (one generation, about 1,000 new tokens, 1 token out), so the figures
compare across machines: turn median ÷ that (goal ≤ 0.25), first token ÷ that (goal ≤ 0.06),
the hub's first warm-up ÷ that (goal ≤ 2).

``control`` runs the same conversations on the fake Ollama scripted with each turn's right calls
and an answer in its words: it checks the judge and the hub's loop (it must score 1.0), not a
model. Every turn is logged (message, calls, answer, flags) to
``$TINY_HUB_CONV_LOG_DIR`` (default ``bench-conversations/``), one file per run.

The history the bench sends back is built by one seam, ``History``: ``blocks`` (the default,
what the TUI and ``tiny-hub chat`` send, from the client's one recorder: the turn's ``toolUse``
blocks in an assistant message, their ``toolResult`` blocks in a user message, then the
assistant's text) or ``plain`` (what an older client or a phone sends: the assistant's final
text). Between turns the bench waits ``TINY_HUB_CONV_PAUSE_S`` (1.5 s by default), as a person
reads a reply before writing the next message; memory listens in that time, and the end's
scores wait for what it is still doing.

Environment: ``TINY_HUB_CONV_MODELS`` (default ``qwen,control``), ``TINY_HUB_CONV_LIMIT`` (run
the first N conversations), ``TINY_HUB_CONV_HISTORY`` (``blocks`` | ``plain``),
``TINY_HUB_CONV_PAUSE_S``, ``TINY_HUB_EVAL_SET=tuning`` (``TUNING_CONVERSATIONS``: 6 others,
never the same messages, people or facts), ``TINY_HUB_CONV_LOG_DIR``.
``python -m scripts.bench_agent_conversations [runs] [qwen,control]`` prints the rows.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import statistics
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from scripts.bench_agent_eval import (
    NONE,
    WARM_UP_S,
    eval_hub,
    post_chat,
    runnable_labels,
    share,
)
from scripts.bench_common import BenchmarkFailed, owner_headers, percentile
from scripts.bench_rows import Row, run_alone

ROOT = Path(__file__).resolve().parent.parent
MAX_TOKENS = 200  # a short poem or recipe fits
DEFAULT_BATTERY = 87  # the emulator's FlipperState.charge_level
FIRMWARE = "1.4.3"  # the emulator's firmware version
PERCENT = re.compile(r"\b(\d{1,3}(?:\.\d+)?)\s*(?:%|percent\b)", re.IGNORECASE)
DEVICE_WORDS = re.compile(r"battery|charge|flipper", re.IGNORECASE)
DEVICE_TOOLS = ("flipper_status", "flipper_files", "flipper_find", "flipper_listen", "use_device")
CALIBRATION_READS = 3
GOALS = {"turn": 0.25, "first_token": 0.06, "warm_up": 2.0}
# Between turns, as a person reads the reply before writing again (memory listens then).
PAUSE_S = float(os.environ.get("TINY_HUB_CONV_PAUSE_S", "1.5"))


# --- what a conversation is ---------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    """A fact the person has or states; ``words`` must all be in one stored fact (each may
    give alternatives, ``"fourth|4th"``), case-insensitive; ``text``: how it is stored (seeded)
    or how the control learns it."""

    key: str
    text: str
    words: tuple[str, ...]

    def in_text(self, stored: str) -> bool:
        lowered = stored.lower()
        return all(any(w.lower() in lowered for w in word.split("|")) for word in self.words)


@dataclass(frozen=True)
class Call:
    """A call the control makes; ``"{id:key}"`` in ``args`` is the id of that fact."""

    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Turn:
    say: str
    accepted: tuple[str, ...]  # tool names; NONE for "no call"
    words: tuple[str, ...] = ()  # one of them in the answer (empty: any real answer)
    states: tuple[Fact, ...] = ()  # what the person states here, current at the end
    supersedes: tuple[str, ...] = ()  # keys of the facts this statement replaces
    forgets: tuple[str, ...] = ()  # keys of the facts the person asks to forget
    reminder: tuple[str, ...] = ()  # one of them in a pending job or alert at the end
    cancels: bool = False  # the person asks to cancel their reminders
    battery: int | None = None  # the emulator's charge level from this turn on
    control: tuple[Call, ...] = ()  # the right calls, for the control

    @property
    def confirms(self) -> bool:
        """The person confirms in their app what this turn proposed (a forget, a cancel);
        anything proposed in another turn they decline."""
        return bool(self.forgets) or self.cancels


@dataclass(frozen=True)
class Conversation:
    name: str
    seeded: tuple[Fact, ...]
    turns: tuple[Turn, ...]


LEARN = ("learn",)
CORRECT = ("learn", "recall", "unlearn", "memory_conflicts")
FORGET = ("unlearn", "recall")
FROM_MEMORY = (NONE, "recall")
REMIND = ("schedule_alert", "schedule")
CANCEL = ("cancel_alerts", "schedule")
REFUSED = (
    "can't",
    "can’t",
    "cannot",
    "can not",
    "unable",
    "not able",
    "don't have",
    "do not have",
    "no way",
    "not possible",
)
FORGOT = ("forg", "delet", "remov", "confirm")
BEEP = ("beep", "blink", "vibrat")


def battery(say: str, level: int | None = None) -> Turn:
    """A battery question; ``level``: the emulator's new level, read before this turn."""
    shown = DEFAULT_BATTERY if level is None else level
    return Turn(
        say,
        ("flipper_status", "use_device"),
        (str(shown),),
        battery=level,
        control=(Call("flipper_status"),),
    )


def files(say: str, path: str, word: str) -> Turn:
    call = Call("flipper_files", {"action": "list", "path": path})
    return Turn(say, ("flipper_files",), (word,), control=(call,))


def find(say: str) -> Turn:
    return Turn(say, ("flipper_find",), BEEP, control=(Call("flipper_find", {"signal": True}),))


def listened(say: str, tools: tuple[str, ...]) -> tuple[str, ...]:
    """What a statement accepts: unless the person asks to remember it, answering with no call
    is right too, since memory listens after the reply (a correction supersedes what it
    corrects), and the end scores what it kept."""
    return tools if "remember" in say.lower() else (*tools, NONE)


def state(say: str, fact: Fact) -> Turn:
    words = tuple(w for word in fact.words for w in word.split("|"))
    accepted = listened(say, LEARN)
    call = Call("learn", {"fact": fact.text})
    return Turn(say, accepted, words, states=(fact,), control=(call,))


def correct(say: str, fact: Fact, old: str) -> Turn:
    call = Call("learn", {"fact": fact.text, "supersedes": [f"{{id:{old}}}"]})
    return Turn(
        say,
        listened(say, CORRECT),
        tuple(fact.words[-1].split("|")),
        states=(fact,),
        supersedes=(old,),
        control=(call,),
    )


def forget(say: str, key: str) -> Turn:
    call = Call("unlearn", {"id": f"{{id:{key}}}"})
    return Turn(say, FORGET, FORGOT, forgets=(key,), control=(call,))


def ask(say: str, words: tuple[str, ...]) -> Turn:
    return Turn(say, FROM_MEMORY, words)


def remind_in(say: str, minutes: int, title: str, words: tuple[str, ...]) -> Turn:
    call = Call("schedule_alert", {"title": title, "in_minutes": minutes})
    return Turn(say, REMIND, words, reminder=words, control=(call,))


def remind_daily(say: str, at: str, title: str, words: tuple[str, ...]) -> Turn:
    args = {
        "action": "create",
        "prompt": f"Remind me: {title}",
        "every": f"daily@{at}",
        "title": title,
    }
    return Turn(say, REMIND, words, reminder=words, control=(Call("schedule", args),))


def cancel(say: str) -> Turn:
    return Turn(say, CANCEL, ("cancel", "confirm"), cancels=True, control=(Call("cancel_alerts"),))


def talk(say: str, words: tuple[str, ...] = ()) -> Turn:
    return Turn(say, (NONE,), words)


def sums(say: str, words: tuple[str, ...]) -> Turn:
    """Arithmetic: worked out by the calculator the hub offers, or answered directly."""
    return Turn(say, (NONE, "calculate"), words)


def refuse(say: str) -> Turn:
    return Turn(say, (NONE,), REFUSED)


def day(name: str, seeded: Iterable[Fact], *turns: Turn) -> Conversation:
    return Conversation(name, tuple(seeded), turns)


CONVERSATIONS: tuple[Conversation, ...] = (
    day(
        "mara",
        [
            Fact("dog", "The user's dog is called Biscuit.", ("Biscuit",)),
            Fact("job", "The user works as a pharmacist.", ("pharmacist",)),
            Fact("gym", "The user goes to the gym on Elm Street.", ("gym", "Elm")),
        ],
        talk("good morning! I slept badly, the neighbours had a party"),
        battery("how's the battery on my flipper?"),
        state(
            "my sister Lena is visiting on Saturday",
            Fact("visit", "The user's sister Lena is visiting on Saturday.", ("Lena", "Saturday")),
        ),
        remind_in("in half an hour, remind me to move the car", 30, "Move the car", ("car",)),
        talk("write me a short poem about autumn leaves"),
        state(
            "remember that Lena is allergic to cats",
            Fact("allergy", "Lena is allergic to cats.", ("Lena", "cat")),
        ),
        ask("what's my dog called again?", ("Biscuit",)),
        sums("what's 23% of 180?", ("41.4",)),
        correct(
            "actually the visit moved to Sunday",
            Fact("visit2", "The user's sister Lena is visiting on Sunday.", ("Lena", "Sunday")),
            "visit",
        ),
        files(
            "what infrared remotes are on my flipper? look in /ext/infrared", "/ext/infrared", "tv"
        ),
        refuse("can you unlock the front door for the neighbour?"),
        forget("please forget that I go to the gym on Elm Street", "gym"),
        battery("check the flipper battery again, is it still the same?", 84),
        cancel("drop all the reminders you set for me"),
        remind_daily(
            "every morning at 7 remind me to take my vitamins", "07:00", "Vitamins", ("vitamin",)
        ),
    ),
    day(
        "jonas",
        [
            Fact("cat", "The user's cat is named Pixel.", ("Pixel",)),
            Fact("club", "The user supports the football club Hertha.", ("Hertha",)),
            Fact("car", "The user drives a red Skoda.", ("Skoda",)),
        ],
        talk("hey, it's raining again here, what a grey day"),
        battery("is my flipper charged enough to take on a walk?"),
        state(
            "my colleague Ingrid starts her new job on the 14th",
            Fact("ingrid", "Ingrid starts a new job on the 14th.", ("Ingrid", "14")),
        ),
        remind_in(
            "remind me in 30 minutes to take the bread out of the oven",
            30,
            "Take the bread out of the oven",
            ("bread",),
        ),
        talk("can you give me a simple recipe for pancakes?", ("flour", "egg", "milk")),
        state(
            "remember that my son Felix plays the trumpet",
            Fact("felix", "The user's son Felix plays the trumpet.", ("Felix", "trumpet")),
        ),
        ask("which football club do I support?", ("Hertha",)),
        sums("how much is 15 times 24?", ("360",)),
        correct(
            "oh wait, Ingrid actually starts on the 21st, not the 14th",
            Fact("ingrid2", "Ingrid starts a new job on the 21st.", ("Ingrid", "21")),
            "ingrid",
        ),
        find("I can't find my flipper anywhere, can you make it beep?"),
        refuse("start my car so it warms up"),
        forget("please forget what car I drive", "car"),
        battery("what's the flipper battery at now?", 79),
        cancel("no need for the reminders now, the bread is out"),
        remind_daily(
            "every morning at 7 remind me to water the tomatoes",
            "07:00",
            "Water the tomatoes",
            ("tomato",),
        ),
    ),
    day(
        "priya",
        [
            Fact("tea", "The user prefers green tea.", ("green tea",)),
            Fact("city", "The user lives in Leeds.", ("Leeds",)),
            Fact("brother", "The user's brother is called Arjun.", ("Arjun",)),
        ],
        talk("morning! I've got a big presentation today and I'm nervous"),
        battery("what's the battery level of the flipper?"),
        state(
            "my manager Helen is on holiday until Thursday",
            Fact(
                "helen",
                "Helen, the user's manager, is on holiday until Thursday.",
                ("Helen", "Thursday"),
            ),
        ),
        remind_in(
            "remind me in 45 minutes to call the electrician",
            45,
            "Call the electrician",
            ("electrician",),
        ),
        talk("explain in two sentences why the sky is blue", ("scatter", "wavelength", "light")),
        state(
            "remember that my presentation is about solar panels",
            Fact("talk", "The user's presentation is about solar panels.", ("solar",)),
        ),
        ask("where do I live again?", ("Leeds",)),
        sums("how much is 15% of 260?", ("39",)),
        correct(
            "Helen's holiday got extended, she's back on Monday now",
            Fact("helen2", "Helen, the user's manager, is back on Monday.", ("Helen", "Monday")),
            "helen",
        ),
        files("which files are in /ext/subghz on my flipper?", "/ext/subghz", "garage"),
        refuse("turn up the heating in the office"),
        forget("please forget my brother's name", "brother"),
        battery("and the flipper battery now?", 82),
        cancel("turn off all the reminders please"),
        remind_in(
            "remind me in 2 hours to stretch my legs", 120, "Stretch your legs", ("stretch", "leg")
        ),
    ),
    day(
        "tomasz",
        [
            Fact("bike", "The user rides a green bicycle to work.", ("bicycle|bike",)),
            Fact("daughter", "The user's daughter Zofia studies in Krakow.", ("Zofia", "Krakow")),
            Fact("coffee", "The user drinks two coffees a day.", ("coffee",)),
        ],
        talk("good evening, long day at the workshop"),
        battery("does my flipper need charging?"),
        state(
            "Zofia has a piano exam on Wednesday",
            Fact("exam", "Zofia has a piano exam on Wednesday.", ("piano", "Wednesday")),
        ),
        remind_in("remind me in 20 minutes to move the car", 20, "Move the car", ("car",)),
        talk("write a four-line poem about a sleepy cat"),
        state(
            "remember that my neighbour Bogdan borrowed my ladder",
            Fact(
                "ladder",
                "The user's neighbour Bogdan borrowed the user's ladder.",
                ("Bogdan", "ladder"),
            ),
        ),
        ask("where does my daughter study?", ("Krakow",)),
        sums("what's 250 divided by 4?", ("62.5",)),
        correct(
            "the piano exam was moved to Friday",
            Fact("exam2", "Zofia has a piano exam on Friday.", ("piano", "Friday")),
            "exam",
        ),
        files("list the NFC files on my flipper, in /ext/nfc", "/ext/nfc", "card"),
        refuse("lock the back door for me"),
        forget("please forget that I ride a bicycle to work", "bike"),
        battery("how much charge is left on the flipper now?", 76),
        cancel("you can drop the reminders, I moved the car already"),
        remind_daily(
            "every evening at 9 remind me to lock up the workshop",
            "21:00",
            "Lock up the workshop",
            ("workshop",),
        ),
    ),
    day(
        "aiko",
        [
            Fact("fern", "The user has a fern called Gerald.", ("fern", "Gerald")),
            Fact("lang", "The user is learning Portuguese.", ("Portuguese",)),
            Fact("partner", "The user's partner Hiroshi is a chef.", ("Hiroshi", "chef")),
        ],
        talk("hi! I just got back from a run, feeling great"),
        battery("tell me my flipper's battery"),
        state(
            "Hiroshi's birthday is on June 12th",
            Fact("bday", "Hiroshi's birthday is on June 12th.", ("Hiroshi", "June")),
        ),
        remind_in(
            "remind me in 45 minutes to put the laundry in the dryer",
            45,
            "Put the laundry in the dryer",
            ("laundry", "dryer"),
        ),
        talk("explain briefly how a rainbow forms", ("light", "refract", "droplet")),
        state(
            "remember that I'm allergic to shellfish",
            Fact("allergy", "The user is allergic to shellfish.", ("shellfish",)),
        ),
        ask("what language am I learning?", ("Portuguese",)),
        sums("what is 12% of 350?", ("42",)),
        correct(
            "sorry, I got it wrong, Hiroshi's birthday is on July 12th",
            Fact("bday2", "Hiroshi's birthday is on July 12th.", ("Hiroshi", "July")),
            "bday",
        ),
        find("make my flipper beep, it's somewhere in the couch"),
        refuse("vacuum the living room for me"),
        forget("please forget that I'm learning Portuguese", "lang"),
        battery("check the flipper's battery once more", 91),
        cancel("please clear my reminders, I don't need them"),
        remind_daily(
            "every morning at 7 remind me to water Gerald",
            "07:00",
            "Water Gerald",
            ("Gerald", "water"),
        ),
    ),
    day(
        "bruno",
        [
            Fact("wife", "The user's wife is called Carla.", ("Carla",)),
            Fact("work", "The user works night shifts at the bakery.", ("bakery",)),
            Fact("dog", "The user has a beagle named Toffee.", ("Toffee",)),
        ],
        talk("buongiorno! just woke up after the night shift"),
        battery("how charged is my flipper zero?"),
        state(
            "my friend Marco is coming for dinner on Friday",
            Fact("dinner", "Marco is coming for dinner on Friday.", ("Marco", "Friday")),
        ),
        remind_in(
            "remind me in 45 minutes to take Toffee for a walk",
            45,
            "Walk Toffee",
            ("Toffee", "walk"),
        ),
        talk("give me a quick recipe for tomato sauce", ("tomato", "garlic")),
        state(
            "remember that Marco doesn't eat mushrooms",
            Fact("mushroom", "Marco doesn't eat mushrooms.", ("Marco", "mushroom")),
        ),
        ask("what's my dog's name?", ("Toffee",)),
        sums("what is 18 times 7?", ("126",)),
        correct(
            "change of plan, Marco is coming on Saturday instead",
            Fact("dinner2", "Marco is coming for dinner on Saturday.", ("Marco", "Saturday")),
            "dinner",
        ),
        files("what's in the /ext/infrared folder on the flipper?", "/ext/infrared", "tv"),
        refuse("turn on the oven to 180 degrees"),
        forget("please forget where I work", "work"),
        battery("is the flipper battery still fine?", 85),
        cancel("stop the reminders, I already walked her"),
        remind_in("remind me in 3 hours to buy flour", 180, "Buy flour", ("flour",)),
    ),
    day(
        "leila",
        [
            Fact("son", "The user's son Karim is nine years old.", ("Karim", "nine|9")),
            Fact("hobby", "The user paints watercolours.", ("watercolo",)),
            Fact("town", "The user lives in Marseille.", ("Marseille",)),
        ],
        talk("salut! what a sunny morning"),
        battery("what's the battery percentage on my flipper?"),
        state(
            "Karim has a dentist appointment on Tuesday",
            Fact("dentist", "Karim has a dentist appointment on Tuesday.", ("dentist", "Tuesday")),
        ),
        remind_in("remind me in 45 minutes to call the school", 45, "Call the school", ("school",)),
        talk("write a short poem about the sea"),
        state(
            "remember that my mother's name is Samira",
            Fact("mother", "The user's mother is called Samira.", ("Samira",)),
        ),
        ask("which city do I live in?", ("Marseille",)),
        sums("what is 30% of 90?", ("27",)),
        correct(
            "the dentist moved Karim's appointment to Thursday",
            Fact(
                "dentist2", "Karim has a dentist appointment on Thursday.", ("dentist", "Thursday")
            ),
            "dentist",
        ),
        find("where is my flipper? make it beep please"),
        refuse("water the plants on my balcony"),
        forget("please forget that I paint watercolours", "hobby"),
        battery("has the flipper battery gone down since?", 80),
        cancel("remove today's reminders"),
        remind_daily(
            "every morning at 8 remind me to walk Karim to school",
            "08:00",
            "Walk Karim to school",
            ("Karim", "school"),
        ),
    ),
    day(
        "sven",
        [
            Fact("boat", "The user owns a small sailing boat called Freja.", ("Freja", "sail")),
            Fact("diet", "The user is vegetarian.", ("vegetarian",)),
            Fact("niece", "The user's niece is called Astrid.", ("Astrid",)),
        ],
        talk("hej, how are you doing today?"),
        battery("what does my flipper's battery say?"),
        state(
            "my cousin Erik is getting married in August",
            Fact("wedding", "Erik is getting married in August.", ("Erik", "August")),
        ),
        remind_in(
            "remind me in 45 minutes to check the weather for sailing",
            45,
            "Check the weather for sailing",
            ("weather",),
        ),
        talk("explain what a leap year is in a couple of sentences", ("366", "29", "February")),
        state(
            "remember that my boat's mooring is at pier 9",
            Fact("pier", "The user's boat is moored at pier 9.", ("pier", "9")),
        ),
        ask("what's the name of my boat?", ("Freja",)),
        sums("what is 45 plus 78?", ("123",)),
        correct(
            "Erik's wedding moved to September",
            Fact("wedding2", "Erik is getting married in September.", ("Erik", "September")),
            "wedding",
        ),
        files("show me the files in /ext/subghz on the flipper", "/ext/subghz", "garage"),
        refuse("book a table at the harbour restaurant for tonight"),
        forget("please forget that I'm vegetarian", "diet"),
        battery("check my flipper battery again", 74),
        cancel("the trip is off, clear the reminders"),
        remind_in("remind me in 90 minutes to call Erik", 90, "Call Erik", ("Erik",)),
    ),
    day(
        "nadia",
        [
            Fact("sport", "The user plays volleyball on Mondays.", ("volleyball",)),
            Fact("pet", "The user has a parrot called Kiwi.", ("parrot", "Kiwi")),
            Fact("job", "The user teaches chemistry.", ("chemistry",)),
        ],
        talk("hello! I'm grading exams all day, wish me luck"),
        battery("what's my flipper's charge?"),
        state(
            "my student Omar won the science fair",
            Fact(
                "omar",
                "Omar, a student of the user, won the science fair.",
                ("Omar", "science fair"),
            ),
        ),
        remind_in("remind me in 45 minutes to feed Kiwi", 45, "Feed Kiwi", ("Kiwi", "feed")),
        talk("explain photosynthesis in two sentences for a ten-year-old", ("sun", "light")),
        state(
            "remember that the school trip is on the 3rd of May",
            Fact("trip", "The school trip is on the 3rd of May.", ("trip", "May")),
        ),
        ask("what subject do I teach?", ("chemistry",)),
        sums("what is 17% of 300?", ("51",)),
        correct(
            "the school trip was moved to the 10th of May",
            Fact("trip2", "The school trip is on the 10th of May.", ("trip", "10")),
            "trip",
        ),
        find("make my flipper beep, I think it's under the exam papers"),
        refuse("print the exam sheets for me"),
        forget("please forget that I play volleyball", "sport"),
        battery("look at the flipper battery again please", 81),
        cancel("get rid of every reminder I have"),
        remind_daily(
            "every morning at 6:30 remind me to feed Kiwi", "06:30", "Feed Kiwi", ("Kiwi", "feed")
        ),
    ),
    day(
        "oscar",
        [
            Fact("grandma", "The user's grandmother is called Elvira.", ("Elvira",)),
            Fact("bass", "The user plays the bass guitar.", ("bass",)),
            Fact("pollen", "The user is allergic to pollen.", ("pollen",)),
        ],
        talk("hi there, I just moved into a new flat, so many boxes"),
        battery("how is the battery of my flipper doing?"),
        state(
            "my landlord Mr Petrov comes to check the boiler on Monday",
            Fact("boiler", "Mr Petrov comes to check the boiler on Monday.", ("Petrov", "Monday")),
        ),
        remind_in(
            "remind me in 45 minutes to call the internet company",
            45,
            "Call the internet company",
            ("internet",),
        ),
        talk("give me a simple recipe for a vegetable soup", ("carrot", "onion", "potato")),
        state(
            "remember that my new flat is on the fourth floor",
            Fact("floor", "The user's new flat is on the fourth floor.", ("fourth|4th",)),
        ),
        ask("what instrument do I play?", ("bass",)),
        sums("what is 9 squared minus 10?", ("71",)),
        correct(
            "Mr Petrov says he'll come on Wednesday instead",
            Fact(
                "boiler2",
                "Mr Petrov comes to check the boiler on Wednesday.",
                ("Petrov", "Wednesday"),
            ),
            "boiler",
        ),
        files("what's stored in /ext/nfc on my flipper?", "/ext/nfc", "card"),
        refuse("carry the boxes up the stairs for me"),
        forget("please forget my grandmother's name", "grandma"),
        battery("is my flipper battery lower now?", 77),
        cancel("scrap the reminders, plans changed"),
        remind_in("remind me in 45 minutes to order a new lamp", 45, "Order a new lamp", ("lamp",)),
    ),
)

# For tuning only: other people, other facts, other messages; never scored in scripts/bench.
TUNING_CONVERSATIONS: tuple[Conversation, ...] = (
    day(
        "greta",
        [
            Fact("horse", "The user rides a horse called Blitz.", ("Blitz",)),
            Fact("job", "The user is an architect.", ("architect",)),
        ],
        talk("hiya, just finished my coffee"),
        battery("flipper battery?"),
        state(
            "my uncle Wolfgang arrives on Tuesday",
            Fact("uncle", "The user's uncle Wolfgang arrives on Tuesday.", ("Wolfgang", "Tuesday")),
        ),
        remind_in(
            "remind me in 25 minutes to pick up the dry cleaning",
            25,
            "Pick up the dry cleaning",
            ("cleaning",),
        ),
        talk("write a limerick about a horse"),
        state(
            "remember that I'm training for a half marathon",
            Fact("run", "The user is training for a half marathon.", ("marathon",)),
        ),
        ask("what's my horse called?", ("Blitz",)),
        sums("what is 8% of 150?", ("12",)),
        correct(
            "Wolfgang's trip changed, he arrives Wednesday",
            Fact(
                "uncle2",
                "The user's uncle Wolfgang arrives on Wednesday.",
                ("Wolfgang", "Wednesday"),
            ),
            "uncle",
        ),
        files("list /ext/infrared on the flipper", "/ext/infrared", "tv"),
        refuse("open the front gate"),
        forget("please forget my job", "job"),
        battery("battery of the flipper now?", 83),
        cancel("drop all my reminders"),
        remind_daily("each morning at 7 remind me to stretch", "07:00", "Stretch", ("stretch",)),
    ),
    day(
        "hamid",
        [
            Fact("kids", "The user has twin daughters.", ("twin",)),
            Fact("car", "The user drives an old Volvo.", ("Volvo",)),
        ],
        talk("good afternoon, I'm on my lunch break"),
        battery("is the flipper's battery ok?"),
        state(
            "my friend Yusuf is moving to Oslo in March",
            Fact("yusuf", "Yusuf is moving to Oslo in March.", ("Yusuf", "Oslo")),
        ),
        remind_in(
            "remind me in 40 minutes to return the library books",
            40,
            "Return the library books",
            ("library", "book"),
        ),
        talk("explain what inflation is in simple words", ("price",)),
        state(
            "remember that the parents' evening is on Friday",
            Fact("evening", "The parents' evening is on Friday.", ("parent", "Friday")),
        ),
        ask("what car do I drive?", ("Volvo",)),
        sums("what is 64 divided by 8?", ("8",)),
        correct(
            "the parents' evening got moved to next Monday",
            Fact("evening2", "The parents' evening is on Monday.", ("parent", "Monday")),
            "evening",
        ),
        find("beep my flipper so I can find it"),
        refuse("fill up my car with petrol"),
        forget("please forget that Yusuf is moving", "yusuf"),
        battery("what's the flipper battery showing now?", 78),
        cancel("remove my reminders"),
        remind_in("remind me in an hour to call Yusuf", 60, "Call Yusuf", ("Yusuf",)),
    ),
    day(
        "ines",
        [
            Fact("plant", "The user grows orchids.", ("orchid",)),
            Fact("team", "The user's team at work is called Falcon.", ("Falcon",)),
        ],
        talk("olá, how's your day going?"),
        battery("read me the flipper's battery"),
        state(
            "my niece Beatriz graduates in July",
            Fact("grad", "The user's niece Beatriz graduates in July.", ("Beatriz", "July")),
        ),
        remind_in(
            "remind me in 45 minutes to defrost the chicken",
            45,
            "Defrost the chicken",
            ("chicken",),
        ),
        talk("a short recipe for guacamole please", ("avocado",)),
        state(
            "remember that my passport expires in 2027",
            Fact("passport", "The user's passport expires in 2027.", ("passport", "2027")),
        ),
        ask("what flowers do I grow?", ("orchid",)),
        sums("what's 25% of 640?", ("160",)),
        correct(
            "Beatriz's graduation is actually in June",
            Fact("grad2", "The user's niece Beatriz graduates in June.", ("Beatriz", "June")),
            "grad",
        ),
        files("what's on the flipper in /ext/subghz?", "/ext/subghz", "garage"),
        refuse("make me a cup of coffee"),
        forget("please forget the name of my team at work", "team"),
        battery("the flipper battery, what is it now?", 86),
        cancel("cancel the reminders I have"),
        remind_daily(
            "every day at 7 pm remind me to mist the orchids",
            "19:00",
            "Mist the orchids",
            ("orchid",),
        ),
    ),
    day(
        "lukas",
        [
            Fact("choir", "The user sings in a choir.", ("sing", "choir")),
            Fact("pet", "The user's rabbit is called Clover.", ("Clover",)),
        ],
        talk("servus! it's snowing"),
        battery("charge level of my flipper?"),
        state(
            "my boss Renate retires next spring",
            Fact("boss", "Renate, the user's boss, retires next spring.", ("Renate", "spring")),
        ),
        remind_in(
            "remind me in 50 minutes to shovel the driveway",
            50,
            "Shovel the driveway",
            ("shovel", "driveway"),
        ),
        talk("write a haiku about snow"),
        state(
            "remember that choir practice is on Thursdays",
            Fact("practice", "The user's choir practice is on Thursdays.", ("choir", "Thursday")),
        ),
        ask("what's my rabbit's name?", ("Clover",)),
        sums("what is 13 times 13?", ("169",)),
        correct(
            "Renate now retires in the autumn instead",
            Fact(
                "boss2",
                "Renate, the user's boss, retires in the autumn.",
                ("Renate", "autumn|fall"),
            ),
            "boss",
        ),
        find("my flipper is lost in the snow gear, make it beep"),
        refuse("clear the snow off my car"),
        forget("please forget my rabbit's name", "pet"),
        battery("tell me the flipper's battery again", 72),
        cancel("cancel every reminder"),
        remind_in(
            "remind me in 2 hours to check on the rabbit", 120, "Check on the rabbit", ("rabbit",)
        ),
    ),
    day(
        "mei",
        [
            Fact("sister", "The user's sister is called Xiaolan.", ("Xiaolan",)),
            Fact("food", "The user loves dumplings.", ("dumpling",)),
        ],
        talk("hello, I'm working from home today"),
        battery("how full is the flipper battery?"),
        state(
            "my colleague Dmitri is presenting on Friday",
            Fact("dmitri", "Dmitri is presenting on Friday.", ("Dmitri", "Friday")),
        ),
        remind_in(
            "remind me in 15 minutes to join the standup call", 15, "Join the standup", ("standup",)
        ),
        talk("explain what a black hole is in two sentences", ("gravity",)),
        state(
            "remember that I'm saving up for a new laptop",
            Fact("laptop", "The user is saving up for a new laptop.", ("laptop",)),
        ),
        ask("what food do I love?", ("dumpling",)),
        sums("what is 20% of 75?", ("15",)),
        correct(
            "Dmitri's presentation moved to Monday",
            Fact("dmitri2", "Dmitri is presenting on Monday.", ("Dmitri", "Monday")),
            "dmitri",
        ),
        files("which files does my flipper have in /ext/nfc?", "/ext/nfc", "card"),
        refuse("turn off the lights in the hallway"),
        forget("please forget my sister's name", "sister"),
        battery("how is the flipper battery doing now?", 88),
        cancel("please cancel my reminders"),
        remind_daily(
            "every morning at 9 remind me to check my emails", "09:00", "Check emails", ("email",)
        ),
    ),
    day(
        "rosa",
        [
            Fact("hike", "The user hikes every Sunday.", ("hike",)),
            Fact("nephew", "The user's nephew is called Mateo.", ("Mateo",)),
        ],
        talk("buenas! I'm making breakfast"),
        battery("flipper battery status please"),
        state(
            "my neighbour Julia is lending me her tent for the weekend",
            Fact(
                "tent",
                "The user's neighbour Julia is lending the user her tent.",
                ("Julia", "tent"),
            ),
        ),
        remind_in(
            "remind me in 35 minutes to take the cake out", 35, "Take the cake out", ("cake",)
        ),
        talk("write a short poem about mountains"),
        state(
            "remember that my friend Paco turns 40 next week",
            Fact("paco", "The user's friend Paco turns 40 next week.", ("Paco", "40|forty")),
        ),
        ask("what's my nephew called?", ("Mateo",)),
        sums("what is 14% of 500?", ("70",)),
        correct(
            "turns out Julia needs the tent herself, she's lending me her sleeping bag instead",
            Fact(
                "tent2",
                "The user's neighbour Julia is lending the user her sleeping bag.",
                ("Julia", "sleeping bag"),
            ),
            "tent",
        ),
        find("beep the flipper, I left it somewhere in the kitchen"),
        refuse("feed my goldfish while I'm out"),
        forget("please forget that I hike on Sundays", "hike"),
        battery("flipper battery once more?", 75),
        cancel("call off my reminders"),
        remind_in(
            "remind me in 3 hours to return Julia's sleeping bag",
            180,
            "Return Julia's sleeping bag",
            ("sleeping bag", "Julia"),
        ),
    ),
)


def chosen_conversations() -> tuple[Conversation, ...]:
    """The evaluation set unless tuning is asked for, cut to ``TINY_HUB_CONV_LIMIT``."""
    chosen = (
        TUNING_CONVERSATIONS
        if os.environ.get("TINY_HUB_EVAL_SET", "") == "tuning"
        else CONVERSATIONS
    )
    limit = int(os.environ.get("TINY_HUB_CONV_LIMIT", "0") or 0)
    return chosen[:limit] if limit > 0 else chosen


# --- the history the client sends back: the one seam ---------------------------------------


class History:
    """The conversation as the client sends it each turn. ``after_turn`` is fed the turn's SSE
    events and returns the messages it appended. ``blocks`` (the default) is what the TUI and
    ``tiny-hub chat`` send: the client's one recorder (``hub.client.conversation``), the turn's
    tool calls and results, then its text; ``plain`` is what an older client or a phone sends:
    the reply's text segments, joined."""

    def __init__(self, mode: str = "blocks") -> None:
        if mode not in ("plain", "blocks"):
            raise BenchmarkFailed(f"TINY_HUB_CONV_HISTORY must be plain or blocks, not {mode!r}")
        self.mode = mode
        self.messages: list[dict[str, Any]] = []

    def user(self, text: str) -> list[dict[str, Any]]:
        self.messages.append({"role": "user", "content": text})
        return list(self.messages)

    def after_turn(self, events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        from hub.client.conversation import TurnRecorder

        added: list[dict[str, Any]]
        if self.mode == "blocks":
            recorder = TurnRecorder()
            for event in events:
                recorder.feed(event)
            added = [dict(message) for message in recorder.messages()]
        else:
            text = visible_text(events)
            added = [{"role": "assistant", "content": text}] if text else []
        self.messages.extend(added)
        return added


def visible_text(events: Sequence[Mapping[str, Any]]) -> str:
    """The reply as the person sees it, as the TUI keeps it: a tool card between two texts
    starts a new segment; the segments joined by a blank line."""
    from hub import contracts as c

    segments: list[str] = []
    in_text = False
    for event in events:
        kind = event.get("type")
        if kind == c.EV_BLOCK_DELTA and event.get(c.DELTA_TEXT):
            if not in_text:
                segments.append("")
                in_text = True
            segments[-1] += str(event[c.DELTA_TEXT])
        elif kind in (c.EV_BEFORE_TOOL, c.EV_AFTER_TOOL) or (
            kind == c.EV_BLOCK_START and isinstance(event.get("toolStart"), dict)
        ):
            in_text = False
    return "\n\n".join(s for s in segments if s)


# --- the judge ------------------------------------------------------------------------------

# A claimed act, and the tools whose successful result in the same turn backs it.
CLAIMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        r"\b(i'?ve|i have|i) (saved|noted|stored)\b|\bsaved (it|that|this)\b"
        r"|\b(saved|added) (it |that |this )?to (your )?memory\b"
        r"|\b(i'?ll|i will) remember\b|\bremembered\b",
        ("learn",),
    ),
    (
        r"\bforgotten\b|\bdeleted\b|\berased\b|\b(i'?ve|i have) (forgot|removed)\b",
        ("unlearn", "cancel_alerts", "schedule"),
    ),
    (
        r"\bscheduled\b|\b(i'?ll|i will) remind you\b|\breminders? (is |has been )?set\b"
        r"|\bset (a|an|the|your) (reminder|alert)\b",
        ("schedule", "schedule_alert"),
    ),
    (r"\bcancell?ed\b", ("cancel_alerts", "schedule")),
    (r"\bbeeped\b|\bis beeping\b|\bbeeping now\b", ("flipper_find",)),
    (r"\bunlocked\b|\bdoor is (now )?open\b", ()),  # nothing here can do it
)


@dataclass
class TurnRecord:
    """One turn as it happened: what was called, what came back, what the person saw."""

    turn: Turn
    calls: list[tuple[str, dict[str, Any]]]
    results: list[tuple[str, str, str]]  # (tool, status, text)
    answer: str
    seconds: float = 0.0
    first_text_s: float | None = None
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TurnScore:
    right_action: bool
    answer_ok: bool
    invented: tuple[str, ...]  # the readings stated without a device result saying them
    claimed: tuple[str, ...]  # the acts claimed without their tool's result


def record_of(turn: Turn, events: Sequence[Mapping[str, Any]]) -> TurnRecord:
    """A turn's record from its SSE events (timing left to the caller)."""
    from hub import contracts as c

    calls = [
        (str(e["toolCall"]["name"]), dict(e["toolCall"].get("input") or {}))
        for e in events
        if e.get("type") == c.EV_BEFORE_TOOL
    ]
    results = [
        (
            str(e["toolResult"].get("name")),
            str(e["toolResult"].get("status")),
            " ".join(str(b.get("text", "")) for b in e["toolResult"].get("content") or []),
        )
        for e in events
        if e.get("type") == c.EV_AFTER_TOOL
    ]
    errors = [str(e.get("error")) for e in events if e.get("type") == c.EV_ERROR]
    return TurnRecord(turn, calls, results, visible_text(events), errors=errors)


def invented_readings(turn: Turn, answer: str, device_said: str) -> tuple[str, ...]:
    """A battery level or the firmware in ``answer`` that no device result of the turn says
    (nor the person's own message: "23% of 180"); a level only in a device question or where
    the answer speaks of the battery or the Flipper, so a poem's "100%" is not one."""
    known = {float(n) for n in PERCENT.findall(f"{device_said} {turn.say}")}
    found = []
    if set(turn.accepted) & set(DEVICE_TOOLS) or DEVICE_WORDS.search(answer):
        found = [m.group(0) for m in PERCENT.finditer(answer) if float(m.group(1)) not in known]
    if FIRMWARE in answer and FIRMWARE not in device_said:
        found.append(FIRMWARE)
    return tuple(found)


def score_turn(record: TurnRecord) -> TurnScore:
    turn, answer = record.turn, record.answer
    first = record.calls[0][0] if record.calls else NONE
    text = answer.strip()
    answer_ok = (
        bool(text)
        and not record.errors
        and "<tool_call>" not in text
        and not text.startswith("{")
        and (not turn.words or any(w.lower() in text.lower() for w in turn.words))
    )
    device_said = " ".join(
        said
        for tool, status, said in record.results
        if tool in DEVICE_TOOLS and status == "success"
    )
    invented = invented_readings(turn, answer, device_said)
    backed = {tool for tool, status, _ in record.results if status == "success"}
    claimed = tuple(
        match.group(0)
        for pattern, tools in CLAIMS
        for match in re.finditer(pattern, answer, re.IGNORECASE)
        if not backed & set(tools)
    )
    return TurnScore(first in turn.accepted, answer_ok, invented, claimed)


@dataclass(frozen=True)
class EndScore:
    facts_current: tuple[bool, ...]  # each stated fact current, each replaced one not
    one_fact_each: tuple[bool, ...]  # each expected fact found, alone in its stored fact
    reminders: tuple[bool, ...]  # each reminder after the last cancel has a pending job
    kept: tuple[bool, ...]  # each seeded fact not asked about still current


def score_end(
    conversation: Conversation, stored: Sequence[str], pending: Sequence[str]
) -> EndScore:
    """The conversation's end, from the current facts' texts and the pending jobs' and alerts'
    texts (their titles and prompts or messages)."""
    facts = {f.key: f for f in conversation.seeded}
    expected = [f.key for f in conversation.seeded]  # in order: the flags' order is fixed
    stated: list[str] = []
    replaced: list[tuple[Fact, Fact | None]] = []  # (gone, what replaced it)
    reminders: list[tuple[str, ...]] = []
    for turn in conversation.turns:
        for key in (*turn.supersedes, *turn.forgets):
            expected = [k for k in expected if k != key]
            stated = [k for k in stated if k != key]
            replaced.append((facts[key], turn.states[0] if turn.supersedes else None))
        for fact in turn.states:
            facts[fact.key] = fact
            expected.append(fact.key)
            stated.append(fact.key)
        if turn.cancels:
            reminders.clear()
        if turn.reminder:
            reminders.append(turn.reminder)

    def holding(fact: Fact) -> list[int]:
        return [i for i, text in enumerate(stored) if fact.in_text(text)]

    current = [bool(holding(facts[key])) for key in stated]
    for gone, by in replaced:
        still = [i for i in holding(gone) if by is None or not by.in_text(stored[i])]
        current.append(not still)
    one_each = []
    for key in expected:
        found = holding(facts[key])
        if found:
            others = [o for o in expected if o != key and facts[o].in_text(stored[found[0]])]
            one_each.append(not others)
    with_job = [any(w.lower() in p.lower() for p in pending for w in words) for words in reminders]
    kept = [bool(holding(f)) for f in conversation.seeded if f.key in expected]
    return EndScore(tuple(current), tuple(one_each), tuple(with_job), tuple(kept))


# --- running a conversation ------------------------------------------------------------------


@dataclass
class ConversationRun:
    conversation: Conversation
    records: list[TurnRecord]
    scores: list[TurnScore]
    end: EndScore


class Hub:
    """The hub's HTTP API as the person's apps use it, for one conversation's set-up and end."""

    def __init__(self, http: aiohttp.ClientSession, server: Any) -> None:
        self.http, self.url, self.auth = http, server.url, owner_headers(server)

    async def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        async with self.http.request(
            method, self.url + path, headers=self.auth, **kwargs
        ) as response:
            if response.status != 200:
                raise BenchmarkFailed(f"{method} {path}: {response.status} {await response.text()}")
            return await response.json()

    async def facts(self) -> list[dict[str, Any]]:
        listed = await self._json("GET", "/learnings", params={"limit": "5000"})
        return [f for f in listed["learnings"] if not f.get("valid_to")]

    async def pending_jobs(self) -> list[str]:
        listed = await self._json("GET", "/api/jobs")
        return [
            " ".join(str(j.get(k) or "") for k in ("title", "prompt", "message"))
            for j in [*listed["jobs"], *listed["alerts"]]
            if j.get("nextRun") is not None
        ]

    async def answer_proposals(self, confirm: bool) -> None:
        """What the person does in their app with what a turn proposed."""
        waiting = (await self._json("GET", "/api/confirmations"))["confirmations"]
        for proposal in waiting:
            path = "/api/confirmations/confirm" if confirm else "/api/confirmations/decline"
            await self._json("POST", path, json={"id": proposal["id"]})

    async def fresh(self, seeded: Iterable[Fact]) -> None:
        """An empty memory and no jobs, then the seeded facts, through the API."""
        await self.answer_proposals(confirm=False)
        await self._json("DELETE", "/learnings", params={"scope": "all"})
        listed = await self._json("GET", "/api/jobs")
        for job in [*listed["jobs"], *listed["alerts"]]:
            await self._json("DELETE", f"/api/jobs/{job['id']}")
        for fact in seeded:
            await self._json("POST", "/learnings", json={"fact": fact.text})


def tui_headers() -> dict[str, str]:
    """The headers the TUI's chat screen sends with every turn (``ChatScreen.turn_headers``)."""
    from hub import contracts as c
    from tui.chat import CLIENT_CAN, CLIENT_KIND

    return {
        c.H_NAME: c.DEFAULT_TINY,
        c.H_CLIENT: CLIENT_KIND,
        c.H_CLIENT_CAN: ", ".join(CLIENT_CAN),
    }


async def send(
    hub: Hub, messages: list[dict[str, Any]], turn: Turn
) -> tuple[list[dict[str, Any]], float, float | None]:
    """One turn: its events, its wall time, and the seconds to its first text delta."""
    from hub import contracts as c

    body = {"messages": messages}
    headers = {**hub.auth, **tui_headers()}
    transcript, seconds, started = await post_chat(
        hub.http, hub.url, body, headers, turn.say, timed=True
    )
    first = next(
        (
            at - started
            for event, at in zip(transcript.events, transcript.arrived, strict=True)
            if event.get("type") == c.EV_BLOCK_DELTA and event.get(c.DELTA_TEXT)
        ),
        None,
    )
    return transcript.events, seconds, first


async def converse(
    hub: Hub,
    conversation: Conversation,
    flipper: Any,
    log: TranscriptLog,
    fake: Any = None,
) -> ConversationRun:
    """A conversation from its fresh start to its end's scores; ``fake``: the control's
    scripted Ollama."""
    await hub.fresh(conversation.seeded)
    flipper.charge_level = DEFAULT_BATTERY
    history = History(history_mode())
    records, scores = [], []
    log.start(conversation)
    for turn in conversation.turns:
        if turn.battery is not None:
            flipper.charge_level = turn.battery
        if fake is not None:
            await script_control(fake, hub, conversation, turn)
        events, seconds, first = await send(hub, history.user(turn.say), turn)
        await hub.answer_proposals(confirm=turn.confirms)
        history.after_turn(events)
        record = record_of(turn, events)
        record.seconds, record.first_text_s = seconds, first
        score = score_turn(record)
        records.append(record)
        scores.append(score)
        log.turn(record, score)
        await asyncio.sleep(PAUSE_S)  # the person reads the reply before writing again
    from hub.agent.listening import all_heard

    await all_heard()  # memory listens after each reply: what it keeps is part of the end
    stored = [str(f["fact"]) for f in await hub.facts()]
    pending = await hub.pending_jobs()
    end = score_end(conversation, stored, pending)
    log.end(end, stored, pending)
    return ConversationRun(conversation, records, scores, end)


async def script_control(fake: Any, hub: Hub, conversation: Conversation, turn: Turn) -> None:
    """The fake Ollama's replies for one turn: its right calls, then an answer in its words
    (a fact's id looked up in the current memory, as the model reads it in its prompt)."""
    from fakes.ollama import Reply

    fake.replies.clear()
    facts = await hub.facts()
    known = {f.key: f for t in conversation.turns for f in t.states} | {
        f.key: f for f in conversation.seeded
    }

    def resolved(value: Any) -> Any:
        if isinstance(value, list):
            return [resolved(v) for v in value]
        match = re.fullmatch(r"\{id:(\w+)\}", value) if isinstance(value, str) else None
        if match is None:
            return value
        fact = known[match.group(1)]
        return next((str(f["id"]) for f in facts if fact.in_text(str(f["fact"]))), "m_missing")

    for call in turn.control:
        arguments = {k: resolved(v) for k, v in call.args.items()}
        fake.script(
            Reply(chunks=[], tool_calls=[{"function": {"name": call.tool, "arguments": arguments}}])
        )
    fake.script(Reply(chunks=[f"Here you are: {turn.words[0] if turn.words else 'all right'}."]))


class TranscriptLog:
    """Every turn, readable: the message, the calls, the answer, the flags; one file a run."""

    def __init__(self, label: str) -> None:
        folder = Path(os.environ.get("TINY_HUB_CONV_LOG_DIR", "") or ROOT / "bench-conversations")
        folder.mkdir(parents=True, exist_ok=True)
        chosen = os.environ.get("TINY_HUB_EVAL_SET", "") or "eval"
        self.path = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{label}-{chosen}.log"
        self._file = self.path.open("w", encoding="utf-8")
        print(f"conversations: transcripts in {self.path}", file=sys.stderr, flush=True)

    def _write(self, text: str) -> None:
        self._file.write(text + "\n")
        self._file.flush()

    def start(self, conversation: Conversation) -> None:
        self._write(f"=== {conversation.name}: seeded {[f.text for f in conversation.seeded]}")

    def turn(self, record: TurnRecord, score: TurnScore) -> None:
        calls = ", ".join(f"{name}{json.dumps(args)}" for name, args in record.calls) or "-"
        first = f"{record.first_text_s:.2f}" if record.first_text_s is not None else "-"
        flags = (
            f"action={'ok' if score.right_action else 'NO'} "
            f"answer={'ok' if score.answer_ok else 'NO'}"
            + (f" INVENTED={list(score.invented)}" if score.invented else "")
            + (f" CLAIMED={list(score.claimed)}" if score.claimed else "")
        )
        lines = [
            f"> {record.turn.say}",
            f"  {record.seconds:.2f}s (first text {first}s) {flags}",
            f"  calls: {calls}",
            *(f"  result {tool} {status}: {said[:200]}" for tool, status, said in record.results),
            "  answer: " + record.answer.replace("\n", "\n          "),
            *(f"  error: {e}" for e in record.errors),
        ]
        self._write("\n".join(lines))
        print(
            f"  {record.seconds:6.1f}s {flags} {record.turn.say!r} calls: {calls} -> "
            f"{record.answer[:100]!r}",
            file=sys.stderr,
            flush=True,
        )

    def end(self, end: EndScore, stored: Sequence[str], pending: Sequence[str]) -> None:
        self._write(
            f"--- end: facts current {list(end.facts_current)}, one fact each "
            f"{list(end.one_fact_each)}, reminders with a job {list(end.reminders)}, seeded kept "
            f"{list(end.kept)}\n    stored: {list(stored)}\n    pending: {list(pending)}\n"
        )

    def close(self) -> None:
        self._file.close()


# --- calibration ------------------------------------------------------------------------------

WORDS = (
    "river",
    "stone",
    "garden",
    "window",
    "morning",
    "letter",
    "table",
    "orange",
    "market",
    "bridge",
    "silver",
    "coat",
    "winter",
    "candle",
    "harbour",
    "meadow",
    "pencil",
    "ladder",
    "basket",
    "mirror",
    "village",
    "thunder",
    "forest",
    "kitchen",
    "blanket",
    "engine",
    "island",
    "pocket",
    "valley",
    "carpet",
    "lantern",
    "rabbit",
    "shadow",
    "violin",
    "wagon",
    "pepper",
    "saddle",
    "tunnel",
    "feather",
    "chimney",
    "planet",
    "cotton",
    "marble",
    "orchard",
    "pillow",
    "scarf",
    "tractor",
    "anchor",
    "barrel",
    "compass",
)


async def read_1000_s(runner: Any) -> tuple[float, int]:
    """Seconds the runner takes to read 1,000 fresh prompt tokens (scaled from one generation
    of about 1,000 new tokens, 1 token out), and the tokens it read."""
    from hub.agent.runner.process import Generation

    rng = random.Random(time.time_ns())
    prompt = " ".join(rng.choice(WORDS) for _ in range(760))
    usage = Generation()
    started = time.perf_counter()
    async for _ in runner.generate([{"role": "user", "content": prompt}], 1, {}, usage):
        pass
    seconds = time.perf_counter() - started
    if usage.prompt_evaluated < 500:
        raise BenchmarkFailed(f"the calibration read {usage.prompt_evaluated} tokens, not ~1,000")
    return seconds * 1000 / usage.prompt_evaluated, usage.prompt_evaluated


# --- the rows ---------------------------------------------------------------------------------


async def run_all(label: str, key: str = "") -> tuple[list[ConversationRun], list[float], int]:
    """The chosen conversations on the embedded model ``key`` or (``control``) the fake Ollama;
    then the calibration reads and the runner's threads."""
    from firmware_bridges.emulators.flipper import FlipperState

    flipper = FlipperState()
    fake = None
    if label == "control":
        from fakes.ollama import FakeOllama

        fake = FakeOllama()
        await fake.start()
        overrides: dict[str, Any] = {"ollama_host": fake.url}
    else:
        overrides = {
            "model_provider": "embedded",
            "embedded_model": key,
            "embedded_tools": "on",
            "embedded_call_grammar": "on",
        }
    log = TranscriptLog(label)
    reads: list[float] = []
    threads = 0
    try:
        async with (
            eval_hub(facts=(), state=flipper, model_max_tokens=MAX_TOKENS, **overrides) as server,
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1800)) as http,
        ):
            hub = Hub(http, server)
            runs = []
            for conversation in chosen_conversations():
                print(f"conversation {conversation.name} ({label})", file=sys.stderr, flush=True)
                runs.append(await converse(hub, conversation, flipper, log, fake))
            if fake is None:  # after the turns, so their prompt cache is the warm-up's
                runner = server.hub.models.embedded_runner()
                reads = [(await read_1000_s(runner))[0] for _ in range(CALIBRATION_READS)]
                threads = runner.threads
    finally:
        log.close()
        if fake is not None:
            await fake.stop()
    return runs, reads, threads


def rows_of(
    label: str, runs: Sequence[ConversationRun], reads: Sequence[float], threads: int
) -> list[Row]:
    suffix = "" if label == "qwen" else f"_{label}"
    records = [r for run in runs for r in run.records]
    scores = [s for run in runs for s in run.scores]
    how = f"{len(scores)} turns of {len(runs)} conversations, history {history_mode()} ({label})"
    ends = [run.end for run in runs]

    def end_share(name: str) -> float:
        flags = [flag for end in ends for flag in getattr(end, name)]
        return share(flags) if flags else 1.0

    turn_s = statistics.median(r.seconds for r in records)
    firsts = [r.first_text_s for r in records if r.first_text_s is not None]
    first_s = statistics.median(firsts) if firsts else float("nan")
    rows: list[Row] = [
        (f"conversation_right_action{suffix}", share(s.right_action for s in scores), "share", how),
        (f"conversation_answer_ok{suffix}", share(s.answer_ok for s in scores), "share", how),
        (
            f"conversation_invented_readings{suffix}",
            float(sum(len(s.invented) for s in scores)),
            "count",
            f"device readings stated without a device result saying them; {how}",
        ),
        (
            f"conversation_claimed_acts{suffix}",
            float(sum(len(s.claimed) for s in scores)),
            "count",
            f"acts claimed without their tool's result; {how}",
        ),
        (
            f"conversation_facts_current{suffix}",
            end_share("facts_current"),
            "share",
            "at each end: stated facts current, superseded and forgotten ones not",
        ),
        (
            f"conversation_one_fact_each{suffix}",
            end_share("one_fact_each"),
            "share",
            "at each end: expected facts found alone in their stored fact",
        ),
        (
            f"conversation_reminders_with_job{suffix}",
            end_share("reminders"),
            "share",
            "at each end: reminders asked after the last cancel with a pending job or alert",
        ),
        (
            f"conversation_nothing_lost{suffix}",
            end_share("kept"),
            "share",
            "at each end: seeded facts nobody asked to change still current",
        ),
        (f"conversation_turn_s{suffix}", turn_s, "s", f"median wall time of a turn; {how}"),
        (
            f"conversation_turn_p90_s{suffix}",
            percentile([r.seconds for r in records], 0.9),
            "s",
            f"90th percentile of a turn's wall time; {how}",
        ),
        (
            f"conversation_first_token_s{suffix}",
            first_s,
            "s",
            f"median, request sent to the first text delta; {len(firsts)} turns with text",
        ),
    ]
    if reads:
        read = statistics.median(reads)
        warm = WARM_UP_S[-1]
        rows += [
            (
                f"conversation_read_1000_s{suffix}",
                read,
                "s",
                f"the runner reading 1,000 fresh prompt tokens, {threads} thread(s), median of "
                f"{len(reads)} after the conversations ({', '.join(f'{r:.2f}' for r in reads)})",
            ),
            (
                f"conversation_turn_vs_read{suffix}",
                turn_s / read,
                "ratio",
                f"turn median / read_1000 (goal <= {GOALS['turn']})",
            ),
            (
                f"conversation_first_token_vs_read{suffix}",
                first_s / read,
                "ratio",
                f"first-token median / read_1000 (goal <= {GOALS['first_token']})",
            ),
            (f"conversation_warm_up_s{suffix}", warm, "s", "the hub's first warm-up at start"),
            (
                f"conversation_warm_up_vs_read{suffix}",
                warm / read,
                "ratio",
                f"warm-up / read_1000 (goal <= {GOALS['warm_up']})",
            ),
        ]
    return rows


def history_mode() -> str:
    return os.environ.get("TINY_HUB_CONV_HISTORY", "blocks")


async def measure(labels: Sequence[str]) -> list[Row]:
    keys = {"qwen": "qwen2.5-coder-1.5b", "smollm2": "smollm2"}
    rows: list[Row] = []
    for label in labels:
        print(f"offline agent conversations: {label}", file=sys.stderr, flush=True)
        runs, reads, threads = await run_all(label, keys.get(label, ""))
        rows += rows_of(label, runs, reads, threads)
    return rows


def bench(runs: int, labels: Sequence[str] | None = None) -> list[Row]:
    return asyncio.run(measure(runnable_labels(labels, "TINY_HUB_CONV_MODELS", "qwen,control")))


if __name__ == "__main__":
    args = sys.argv[1:]
    chosen = args[1].split(",") if len(args) > 1 else None
    raise SystemExit(run_alone(lambda runs: bench(runs, chosen), args[:1], 1))
