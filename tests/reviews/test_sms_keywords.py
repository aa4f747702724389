"""Inbound SMS wording (reviews.sms_keywords): the pure rules behind opt-outs, opt-ins and help."""

from __future__ import annotations

import pytest

from reviews.sms_keywords import Intent, classify, twilio_answers_itself


@pytest.mark.parametrize(
    "text",
    [
        "STOP",
        "stop",
        "Stop.",
        " STOP!!! ",
        "StopAll",
        "stop all",
        "UNSUBSCRIBE",
        "unsubscribe me please",
        "CANCEL",
        "end",
        "QUIT",
        "revoke",
        "opt out",
        "OPT-OUT",
        "optout",
        "Stop please",
        "please stop",
        "Please STOP texting me",
        "stop texting me",
        "stop sending me these",
        "remove me",
        "Remove me from your list",
        "don't text me",
        "Dont text me again",
        "do not contact me",
        "please take me off this list",
        "no more texts",
        "leave me alone!",
        "STOP 🙏",
        "\uff33\uff34\uff2f\uff30",  # STOP in full-width letters
    ],
)
def test_opt_out_in_any_case_and_wording(text):
    assert classify(text) == Intent.OPT_OUT


@pytest.mark.parametrize(
    "text",
    [
        "Thanks, great service!",
        "I couldn't stop smiling, the end result was amazing, thank you all",
        "When does my appointment end tomorrow afternoon please let me know",
        "",
        "   ",
        "Yes it was great",
    ],
)
def test_ordinary_replies_are_not_opt_outs(text):
    assert classify(text) == Intent.NONE


@pytest.mark.parametrize("text", ["START", "start", "Unstop", "YES", "yes."])
def test_start_unstop_and_yes_opt_back_in(text):
    assert classify(text) == Intent.OPT_IN


def test_help_and_info_ask_for_help():
    assert classify("HELP") == classify("info?") == Intent.HELP


def test_twilio_answers_its_standard_keywords_itself_but_not_free_wording():
    assert twilio_answers_itself("Stop")
    assert twilio_answers_itself("START")
    assert not twilio_answers_itself("please stop texting me")
    assert not twilio_answers_itself("revoke")
