"""Play the owner's browser through login and the consent page over real HTTP.

Used by tests that drive a live server with a real client (Authlib, the Zapier app): the client
builds the authorization URL, this walks the pages a person would, and returns the redirect the
platform would receive.
"""

from __future__ import annotations

from html.parser import HTMLParser

import requests


class FormInputs(HTMLParser):
    """The name/value pairs of a page's hidden inputs (the CSRF token, the consent fields)."""

    def __init__(self, html: str):
        super().__init__()
        self.values: dict[str, str] = {}
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "input" and attrs.get("type") == "hidden" and attrs.get("name"):
            self.values[attrs["name"]] = attrs.get("value") or ""


def log_in(browser: requests.Session, login_page: requests.Response, *, email: str, password: str):
    """Submit the login form of ``login_page``; returns the page it leads to."""
    form = FormInputs(login_page.text).values
    return browser.post(
        login_page.url,
        data={
            "csrfmiddlewaretoken": form["csrfmiddlewaretoken"],
            "username": email,
            "password": password,
            "next": form["next"],
        },
        timeout=30,
    )


def approve(browser: requests.Session, consent_page: requests.Response) -> requests.Response:
    """Press Approve on the consent page; returns the (unfollowed) redirect to the client."""
    return browser.post(
        consent_page.url,
        data={**FormInputs(consent_page.text).values, "allow": "on"},
        allow_redirects=False,
        timeout=30,
    )
