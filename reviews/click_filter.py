"""Which fetches of a review-site link are people, and which are machines.

Corporate mail security (Microsoft Defender Safe Links, Proofpoint, Mimecast, Barracuda,
Google's safe browsing...) and chat link previews open links before, or instead of, the person.
Counting those as clicks would mark the request ``clicked`` and stop its follow-ups for someone
who never looked. A fetch is *not* a human click when:

* it is a ``HEAD`` request (link checkers);
* its user agent is missing, or names a known scanner, preview fetcher, HTTP library or
  headless browser, or calls itself a bot/crawler/spider/preview/scanner;
* it comes within ``MIN_SECONDS_AFTER_SEND`` of the message being sent or delivered: no person
  reads and taps that fast, a gateway scanning the message on arrival does.

Filtered fetches are still recorded, with the reason. Pure functions, no Django.
"""

from __future__ import annotations

import enum
import re
from typing import Literal

MIN_SECONDS_AFTER_SEND = 1.0

_SCANNER_AGENTS = re.compile(
    r"bot\b|bot/|crawl|spider|slurp|preview|scanner|scan/|checker|monitor|"
    r"safelinks|safe ?links|defender|microsoft office|ms-office|outlook-ios-linkpreview|"
    r"proofpoint|mimecast|barracuda|forcepoint|symantec|messagelabs|trend ?micro|sophos|"
    r"fireeye|trellix|cisco|ironport|zscaler|paloalto|fortinet|fortiguard|checkpoint|"
    r"google-safety|google-read-aloud|googleimageproxy|feedfetcher|"
    r"facebookexternalhit|facebot|whatsapp|telegram|slack|discord|skypeuripreview|"
    r"linkedinbot|twitterbot|embedly|iframely|vkshare|pinterest|bitlybot|"
    r"python-requests|python-urllib|aiohttp|httpx|go-http-client|java/|okhttp|"
    r"libwww|curl/|wget/|apache-httpclient|node-fetch|axios|postman|"
    r"headlesschrome|phantomjs|puppeteer|playwright|selenium|lighthouse",
    re.IGNORECASE,
)


class IgnoredReason(enum.StrEnum):
    """Why a fetch was not counted as a click (``Click.ignored_reason``)."""

    HEAD = "head_request"
    NO_USER_AGENT = "no_user_agent"
    SCANNER = "scanner_user_agent"
    TOO_SOON = "too_soon_after_send"


def ignored_reason(
    *, method: str, user_agent: str, seconds_since_send: float | None
) -> IgnoredReason | Literal[""]:
    """Why this fetch is not a human click; ``""`` when it counts."""
    if method.upper() == "HEAD":
        return IgnoredReason.HEAD
    if not user_agent.strip():
        return IgnoredReason.NO_USER_AGENT
    if _SCANNER_AGENTS.search(user_agent):
        return IgnoredReason.SCANNER
    if seconds_since_send is not None and seconds_since_send < MIN_SECONDS_AFTER_SEND:
        return IgnoredReason.TOO_SOON
    return ""
