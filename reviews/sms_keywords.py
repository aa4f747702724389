"""What an inbound SMS asks for: opt out, opt back in, help, or nothing we act on.

The FCC's 2024 consent-revocation rule (47 CFR 64.1200(a)(10), in force since 11 April 2025)
says a reply of "stop, quit, end, revoke, opt out, cancel, or unsubscribe" revokes consent,
and so does any other reasonable wording. So, in any case and with any punctuation:

* the CTIA/Twilio keywords alone (``STOP``, ``STOPALL``, ``UNSUBSCRIBE``, ``CANCEL``, ``END``,
  ``QUIT``, ``REVOKE``, ``OPTOUT``/``OPT OUT``...) opt out;
* a short reply that *starts* with one of them ("Stop please", "STOP!!", "unsubscribe me")
  opts out;
* a reply that contains an unmistakable phrase anywhere ("please stop", "stop texting me",
  "remove me", "don't text me", "take me off your list") opts out.

A long message that merely contains "stop" or "end" in passing ("couldn't stop smiling, the
end result was great") is not read as an opt-out. ``START``, ``UNSTOP`` and ``YES`` alone opt
back in; ``HELP``/``INFO`` alone ask for help. Pure functions, no Django.
"""

from __future__ import annotations

import enum
import re
import unicodedata


class Intent(enum.StrEnum):
    OPT_OUT = "opt_out"
    OPT_IN = "opt_in"
    HELP = "help"
    NONE = "none"


OPT_OUT_KEYWORDS = frozenset(
    {
        "stop",
        "stopall",
        "stop all",
        "unsubscribe",
        "unsub",
        "cancel",
        "end",
        "quit",
        "revoke",
        "optout",
        "opt out",
        "opt-out",
    }
)
# Twilio's Advanced Opt-Out answers these itself (its default keyword set); see
# ``twilio_answers_itself``.
TWILIO_STANDARD_KEYWORDS = frozenset(
    {
        "stop",
        "stopall",
        "unsubscribe",
        "cancel",
        "end",
        "quit",
        "start",
        "unstop",
        "yes",
        "help",
        "info",
    }
)
OPT_IN_KEYWORDS = frozenset({"start", "unstop", "yes"})
HELP_KEYWORDS = frozenset({"help", "info"})

# A reply of at most this many words that starts with an opt-out keyword is an opt-out.
_SHORT_REPLY_WORDS = 5
_FIRST_WORDS = frozenset(
    {"stop", "stopall", "unsubscribe", "unsub", "cancel", "end", "quit", "revoke", "optout"}
)
_PHRASES = re.compile(
    r"\b("
    r"please stop|stop please|stop it|stop now"
    r"|stop (?:texting|messaging|sending|contacting|emailing|txting|msging|spamming)"
    r"|unsubscribe|opt ?out|remove me|take me off|delete me|leave me alone"
    r"|(?:do not|dont|don't|never) (?:text|message|msg|txt|contact|send)"
    r"|no more (?:texts|messages|msgs|txts|sms)"
    r")\b"
)


def normalize(text: str) -> str:
    """Lower-case words separated by single spaces; punctuation dropped except inner ' and -."""
    text = unicodedata.normalize("NFKC", text or "").casefold()
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    text = re.sub(r"[^\w\s'-]", " ", text)
    text = re.sub(r"(?<!\w)['-]|['-](?!\w)", " ", text)  # quotes/dashes not inside a word
    return " ".join(text.split())


def classify(text: str) -> Intent:
    """The intent of an inbound SMS body."""
    words = normalize(text)
    if not words:
        return Intent.NONE
    if words in OPT_OUT_KEYWORDS:
        return Intent.OPT_OUT
    if words in OPT_IN_KEYWORDS:
        return Intent.OPT_IN
    if words in HELP_KEYWORDS:
        return Intent.HELP
    split = words.split()
    if split[0] in _FIRST_WORDS and len(split) <= _SHORT_REPLY_WORDS:
        return Intent.OPT_OUT
    if _PHRASES.search(words):
        return Intent.OPT_OUT
    return Intent.NONE


def twilio_answers_itself(text: str) -> bool:
    """Whether Twilio's default opt-out handling already replied to this exact keyword."""
    return normalize(text) in TWILIO_STANDARD_KEYWORDS


OPT_OUT_CONFIRMATION = (
    "You're unsubscribed and will get no more review requests by text. Reply START to undo."
)
OPT_IN_CONFIRMATION = "You're subscribed again to review requests by text. Reply STOP to opt out."


def sms_reply_text(
    text: str, intent: Intent, *, help_text: str, twilio_answers_standard: bool
) -> str:
    """Our answer to an inbound SMS, ``""`` for none: one confirmation at most. Twilio's own
    opt-out handling already answers its standard keywords (``twilio_answers_standard``), so
    then we answer only the wordings it does not know."""
    if twilio_answers_standard and twilio_answers_itself(text):
        return ""
    return {
        Intent.OPT_OUT: OPT_OUT_CONFIRMATION,
        Intent.OPT_IN: OPT_IN_CONFIRMATION,
        Intent.HELP: help_text,
    }.get(intent, "")
