"""A fact about the person, in the third person: "I'm allergic to hazelnuts" → "The user is
allergic to hazelnuts".

Every turn shows a person's facts to the model as what it remembers about "the user"; a fact
stored as the model copied it from the message ("I'm allergic ...", "my bicycle ...") reads, in
that list, as if the companion were speaking of itself. Small models copy the first person
whatever a tool's description asks, so ``learn`` rewrites it.

Written here rather than taken from a library: the grammar libraries that change person
(inflection packages, spaCy pipelines) need models or data the hub does not ship, and the job is
narrow: the first-person pronouns, and the verb right after "I" put in the third person. A verb
form it does not know (a past tense such as "bought") is left as it is, which stays correct.
"""

from __future__ import annotations

import re

SUBJECT = "the user"
POSSESSIVE = "the user's"

# "I" + a contraction or a form of be/have whose third person is not the verb plus "s".
CONTRACTIONS = {
    "i'm": "the user is",
    "i am": "the user is",
    "i've": "the user has",
    "i'll": "the user will",
    "i'd": "the user would",
    "i was": "the user was",
    "i have": "the user has",
    "i do": "the user does",
    "i don't": "the user doesn't",
    "i dont": "the user doesn't",
    "i go": "the user goes",
}
# After "I", left as they are: modals, past tenses, and words that are not verbs at all.
UNCHANGED_WORDS = """can could will would shall should may might must cannot can't couldn't won't
    wouldn't shouldn't didn't wasn't had did was were are went got made took saw came knew met ran
    wrote grew began left lost found gave told said thought felt kept sold sent spent built broke
    chose drove ate fell flew forgot heard hurt paid put read rode set sat slept spoke stood
    taught won wore became bought brought caught fought sought used"""
UNCHANGED = frozenset(UNCHANGED_WORDS.split())
# Words between "I" and its verb ("I really like ..."): the verb after them is conjugated.
ADVERBS = "also|really|usually|always|never|often|sometimes|just|still|already|only|mostly|rarely"
PRONOUNS = {"my": POSSESSIVE, "mine": POSSESSIVE, "me": SUBJECT, "myself": "themselves"}

_I_PHRASE = re.compile(
    r"(?<!and )(?<!or )\b(?:"
    + "|".join(re.escape(k) for k in sorted(CONTRACTIONS, key=len, reverse=True))
    + r")\b",
    re.IGNORECASE,
)
# "I" as the only subject; after "and"/"or" it shares a plural verb ("Ana and I are").
_I_VERB = re.compile(rf"(?<!and )(?<!or )\bI\s+((?:(?:{ADVERBS})\s+)*)([A-Za-z']+)\b")
_I = re.compile(r"\bI\b")
_PRONOUN = re.compile(r"\b(my|mine|me|myself)\b", re.IGNORECASE)


def third_person(text: str) -> str:
    """``text`` with the person's first-person words put in the third person, its first
    letter capitalised; text without them is returned as it was."""
    changed = _I_PHRASE.sub(lambda m: CONTRACTIONS[m.group(0).lower()], text)
    changed = _I_VERB.sub(lambda m: f"{SUBJECT} {m.group(1)}{conjugated(m.group(2))}", changed)
    changed = _I.sub(SUBJECT, changed)
    changed = _PRONOUN.sub(lambda m: PRONOUNS[m.group(1).lower()], changed)
    if changed == text:
        return text
    return changed[:1].upper() + changed[1:]


def conjugated(verb: str) -> str:
    """The third person singular of a base-form verb ("like" → "likes"); anything that does
    not look like one is returned unchanged."""
    lower = verb.lower()
    if lower in UNCHANGED or lower.endswith(("ed", "n't")) or "'" in lower:
        return verb
    if lower == "have":
        return "has"
    if lower == "be":
        return "is"
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(lower) > 2 and lower.endswith("y") and lower[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


# "the user" + a form whose second person is not the verb without its "s".
SECOND_PERSON_FORMS = {
    "the user's": "your",
    "the user is": "you are",
    "the user was": "you were",
    "the user has": "you have",
    "the user does": "you do",
    "the user doesn't": "you don't",
    "the user goes": "you go",
    "the user themselves": "you yourself",
    "themselves": "yourself",
}
_USER_PHRASE = re.compile(
    r"\b(?:"
    + "|".join(re.escape(k) for k in sorted(SECOND_PERSON_FORMS, key=len, reverse=True))
    + r")\b",
    re.IGNORECASE,
)
_USER_VERB = re.compile(rf"\bthe user\s+((?:(?:{ADVERBS})\s+)*)([a-z']+)\b", re.IGNORECASE)
_USER = re.compile(r"\bthe user\b", re.IGNORECASE)


def second_person(text: str) -> str:
    """A fact about "the user" as said to the person ("The user's sister is Ana" → "Your
    sister is Ana"); text that does not speak of the user is returned as it was.

    A small model answers in the words it was shown: shown facts about "the user", the 1.5B
    answered "The user's dog is called Rex" to the person who owns the dog."""
    changed = _USER_PHRASE.sub(lambda m: SECOND_PERSON_FORMS[m.group(0).lower()], text)
    changed = _USER_VERB.sub(lambda m: f"you {m.group(1)}{base_form(m.group(2))}", changed)
    changed = _USER.sub("you", changed)
    if changed == text:
        return text
    return changed[:1].upper() + changed[1:]


def base_form(verb: str) -> str:
    """The base form of a third-person singular verb ("likes" → "like"); the reverse of
    :func:`conjugated`. Anything else (a past tense, a modal) is returned unchanged."""
    lower = verb.lower()
    if lower in UNCHANGED or not lower.endswith("s") or lower.endswith(("ss", "us", "is")):
        return verb
    if len(lower) > 4 and lower.endswith("ies"):
        return verb[:-3] + "y"
    if lower.endswith(("sses", "shes", "ches", "xes", "zes", "oes")):
        return verb[:-2]
    return verb[:-1]
