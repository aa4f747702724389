"""Password reset through the real processes: the web process queues, a worker sends to the
outbox, and the link in the file works against the web process."""

from __future__ import annotations

import email
import re
from email import policy

import pytest
import requests

from tests.factories import UserFactory
from tests.support.consent import FormInputs
from tests.support.processes import ServiceProcesses

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

NEW_PASSWORD = "a fresh and long passphrase 42"


def post_form(browser: requests.Session, page: requests.Response, **fields) -> requests.Response:
    data = {**FormInputs(page.text).values, **fields}
    return browser.post(page.url, data=data, timeout=30)


def test_a_reset_mail_from_the_worker_lands_in_the_outbox_and_its_link_works(tmp_path):
    UserFactory(email="owner@example.com", business_name="Acme Plumbing")
    svc = ServiceProcesses(tmp_path, ["web", "worker"], embedded_broker=True)
    # Links in mail point at SITE_URL, the web process here (honcho gives the worker PORT+100).
    svc.env["SITE_URL"] = svc.base_url
    with svc:
        browser = requests.Session()
        page = svc.wait_for(
            lambda: browser.get(f"{svc.base_url}/accounts/password_reset/", timeout=5),
            what="the reset page",
        )
        done = post_form(browser, page, email="owner@example.com")
        assert done.url == f"{svc.base_url}/accounts/password_reset/done/"

        outbox = tmp_path / "outbox"
        [mail_file] = svc.wait_for(
            lambda: list(outbox.glob("*.eml")), timeout=60, what="the reset e-mail"
        )
        mail = email.message_from_bytes(mail_file.read_bytes(), policy=policy.default)
        assert mail["To"] == "owner@example.com"
        link = re.search(r"^(http\S+/accounts/reset/\S+/)$", mail.get_content(), re.MULTILINE)[1]

        form = browser.get(link, timeout=30)
        assert "Choose a new password" in form.text
        complete = post_form(browser, form, new_password1=NEW_PASSWORD, new_password2=NEW_PASSWORD)
        assert complete.url.endswith("/accounts/reset/done/")

        login = browser.get(f"{svc.base_url}/accounts/login/", timeout=30)
        dashboard = post_form(browser, login, username="owner@example.com", password=NEW_PASSWORD)
        assert "each counted on the day it happened" in dashboard.text
