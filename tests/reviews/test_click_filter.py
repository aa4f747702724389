"""Click filtering (reviews.click_filter): scanners, previews, libraries, HEAD requests and clicks
within a second of sending are not a person's click."""

from __future__ import annotations

import pytest

from reviews.click_filter import IgnoredReason, ignored_reason

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
