"""Inbound SMS wording and click filtering: the pure rules behind opt-outs and clicks."""

from __future__ import annotations

import pytest

from reviews.click_filter import IgnoredReason, ignored_reason
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


HUMAN = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
)


@pytest.mark.parametrize(
    ("user_agent", "reason"),
    [
        ("", IgnoredReason.NO_USER_AGENT),
        ("Mozilla/5.0 (compatible; Googlebot/2.1)", IgnoredReason.SCANNER),
        ("Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0)", IgnoredReason.SCANNER),
        ("Mozilla/5.0 SafeLinks", IgnoredReason.SCANNER),
        ("Proofpoint URL Defense", IgnoredReason.SCANNER),
        ("Mimecast-UrlProtect/1.0", IgnoredReason.SCANNER),
        ("Barracuda Sentinel (EE)", IgnoredReason.SCANNER),
        ("Google-Safety", IgnoredReason.SCANNER),
        ("facebookexternalhit/1.1 Facebot Twitterbot/1.0", IgnoredReason.SCANNER),
        ("WhatsApp/2.23.20.0", IgnoredReason.SCANNER),
        ("Slackbot-LinkExpanding 1.0", IgnoredReason.SCANNER),
        ("python-requests/2.32", IgnoredReason.SCANNER),
        ("curl/8.5.0", IgnoredReason.SCANNER),
        ("Mozilla/5.0 HeadlessChrome/120.0", IgnoredReason.SCANNER),
        ("SomeVendor Link Preview Service", IgnoredReason.SCANNER),
        ("AcmeSecurity URL scanner", IgnoredReason.SCANNER),
        (HUMAN, ""),
    ],
)
def test_scanners_previews_and_libraries_are_not_human_clicks(user_agent, reason):
    assert ignored_reason(method="GET", user_agent=user_agent, seconds_since_send=600) == reason


def test_head_requests_and_clicks_within_a_second_of_sending_are_ignored():
    assert ignored_reason(method="HEAD", user_agent=HUMAN, seconds_since_send=600) == (
        IgnoredReason.HEAD
    )
    assert ignored_reason(method="GET", user_agent=HUMAN, seconds_since_send=0.4) == (
        IgnoredReason.TOO_SOON
    )
    assert ignored_reason(method="GET", user_agent=HUMAN, seconds_since_send=1.5) == ""
    assert ignored_reason(method="GET", user_agent=HUMAN, seconds_since_send=None) == ""
