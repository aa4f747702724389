"""The Zapier app (integrations/zapier), run by zapier-platform-core's app tester against the
live service, as Zapier's runtime would run it.

pytest starts the real web process on 127.0.0.1 against the test database, registers the OAuth
client, and plays the owner's browser through login and consent to get an authorization code
(Zapier's backend does that part in production). The jest suite then exchanges it with the
app's own getAccessToken, tests the connection and its label, refreshes, loads the dynamic
fields through Zapier's schema checks, creates a review request, replays a retried create, and
maps 400/401/429 as Zapier expects. Then the outcomes: each trigger's performList over requests
pytest moved along their lifecycle first, Find Contact, Cancel Review Request, and the REST hook
subscribe and unsubscribe, and one hook received for real: the jest suite subscribes New Review
Click to a receiver of its own, clicks a sent request's review link on the service, and the real
worker delivers the signed event to it. Every jest test runs: none may be skipped.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
from django.urls import reverse
from django.utils import timezone

from reviews.models import ReviewRequest
from tests.factories import DEFAULT_PASSWORD, ReviewSiteFactory, UserFactory
from tests.oauth_provider.conftest import pkce_pair
from tests.support.consent import approve, log_in
from tests.support.oauth import CLIENT_SECRET, REDIRECT_URI, issue_tokens, make_application
from tests.support.portal_data import add_request, click, fail, leave_feedback, opt_out, send_first
from tests.support.processes import ROOT, ServiceProcesses

APP_DIR = ROOT / "integrations" / "zapier"
RATE_LIMIT = 100  # the suite's own requests stay under it; _exhausted_token spends it
FEEDBACK_TEXT = "The plumber was late, but the work is good."

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def npm() -> str:
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("Node.js and npm are not installed (the Zapier app is a Node project)")
    if not (APP_DIR / "node_modules" / "zapier-platform-core").is_dir():
        pytest.skip("integrations/zapier has no node_modules: run `make test` (it runs npm ci)")
    return npm


def _run(npm: str, script: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [npm, "run", "--silent", script],
        cwd=APP_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_app_definition_passes_zapier_validate_offline(npm):
    result = _run(npm, "validate")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "structurally sound" in output


def _authorization_code(base_url: str, application, owner, challenge: str) -> str:
    """What Zapier's backend and the owner's browser do: authorize URL, login, Approve."""
    params = {
        "client_id": application.client_id,
        "redirect_uri": REDIRECT_URI,
        "response_type": "code",
        "state": secrets.token_urlsafe(12),
        "scope": "read write",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    with requests.Session() as browser:
        login_page = browser.get(
            f"{base_url}/api/oauth/zapier/authorize?{urlencode(params)}", timeout=30
        )
        consent = log_in(browser, login_page, email=owner.email, password=DEFAULT_PASSWORD)
        assert consent.status_code == 200, consent.text[:2000]
        callback = approve(browser, consent)
    assert callback.status_code == 302, callback.text[:2000]
    query = parse_qs(urlsplit(callback.headers["Location"]).query)
    assert query["state"] == [params["state"]]
    return query["code"][0]


def _exhausted_token(base_url: str) -> str:
    """An access token of another owner whose hourly allowance is spent."""
    access, _ = issue_tokens(UserFactory.create(), scope="read write")
    with requests.Session() as client:
        client.headers["Authorization"] = f"Bearer {access}"
        for _ in range(RATE_LIMIT):
            response = client.get(f"{base_url}/api/zapier/me", timeout=30)
            assert response.status_code == 200, response.text
        assert response.headers["X-RateLimit-Remaining"] == "0"
    return access


def _outcomes(owner) -> dict[str, str]:
    """Requests of ``owner`` at each outcome a trigger reports, one still active to cancel, and
    another owner's request (which must stay out of reach), and a sent request whose review link
    the jest suite clicks for real (the path of its Google link)."""
    site = ReviewSiteFactory.create(owner=owner, label="Google", url="https://g.page/r/acme/review")
    at = timezone.now() - timedelta(hours=1)
    added = at - timedelta(minutes=1)

    def sent(email: str, **kwargs) -> ReviewRequest:
        request = add_request(
            owner, created_at=added, first_name="Zap", last_name=email, email=f"{email}@x.example"
        )
        send_first(request, at=at, **kwargs)
        return request

    clicked = sent("clicked")
    click(clicked, at=at + timedelta(minutes=5))
    leave_feedback(
        sent("feedback", delivered=True), at=at + timedelta(minutes=6), text=FEEDBACK_TEXT
    )
    opt_out(sent("optedout"), at=at + timedelta(minutes=7), channel="email")
    completed = sent("completed")
    completed.save(
        update_fields=completed.transition(
            ReviewRequest.Status.COMPLETED,
            at=at + timedelta(minutes=8),
            reason=ReviewRequest.EndedReason.SEQUENCE_FINISHED,
        )
    )
    failed = add_request(owner, created_at=added, email="failed@x.example")
    fail(failed, at=at + timedelta(minutes=9), code="550", error="Mailbox does not exist")
    active = add_request(owner, email="cancel@x.example", delay_hours=24)
    theirs = add_request(UserFactory.create(), email="cancel@x.example", delay_hours=24)
    to_click = sent("liveclick")
    return {
        "LIVE_CLICK_REQUEST_ID": str(to_click.id),
        "LIVE_CLICK_PATH": reverse(
            "reviews:go", kwargs={"token": to_click.token, "site_id": site.pk}
        ),
        "CANCEL_REQUEST_ID": str(active.id),
        "OTHER_OWNER_REQUEST_ID": str(theirs.id),
        "CLICKED_REQUEST_ID": str(clicked.id),
        "FAILED_REQUEST_ID": str(failed.id),
        "COMPLETED_REQUEST_ID": str(completed.id),
        "FEEDBACK_TEXT": FEEDBACK_TEXT,
    }


def test_the_app_connects_creates_and_maps_errors_against_the_live_service(npm, tmp_path):
    owner = UserFactory(email="owner@acme.example", business_name="Acme Plumbing")
    application = make_application(client_id="zapier-contract-test")
    verifier, challenge = pkce_pair()
    outcomes = _outcomes(owner)
    service_env = {
        "RATE_LIMIT_PER_HOUR": str(RATE_LIMIT),
        # The hook targets of the subscribe tests are local (development and tests only).
        "WEBHOOK_ALLOW_PRIVATE_TARGETS": "true",
    }
    # The worker delivers the live click's event (kicked when the click commits; no beat).
    with ServiceProcesses(tmp_path, ["web", "worker"], env=service_env) as svc:
        svc.wait_for(lambda: requests.get(f"{svc.base_url}/healthz", timeout=2).ok, what="web")
        env = {
            **svc.env,
            "BASE_URL": svc.base_url,
            "CLIENT_ID": application.client_id,
            "CLIENT_SECRET": CLIENT_SECRET,
            "REDIRECT_URI": REDIRECT_URI,
            "AUTH_CODE": _authorization_code(svc.base_url, application, owner, challenge),
            "CODE_VERIFIER": verifier,
            "OWNER_EMAIL": owner.email,
            "OWNER_BUSINESS_NAME": owner.business_name,
            "THROTTLED_ACCESS_TOKEN": _exhausted_token(svc.base_url),
            **outcomes,
            "NODE_ENV": "test",
        }
        result = _run(npm, "test", env)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{output[-8000:]}\n--- service log ---\n{svc.log()[-4000:]}"
    summary = output.split("Tests:")[-1].split("\n")[0] if "Tests:" in output else ""
    assert "passed" in summary and "failed" not in summary and "skipped" not in summary, output


def test_the_app_pins_its_zapier_packages():
    package = json.loads((APP_DIR / "package.json").read_text())
    lock = json.loads((APP_DIR / "package-lock.json").read_text())
    assert package["dependencies"]["zapier-platform-core"] == "19.1.0"
    assert package["devDependencies"]["zapier-platform-cli"] == "19.1.0"
    installed = lock["packages"]["node_modules/zapier-platform-core"]["version"]
    assert installed == "19.1.0"


def test_idempotency_keys_are_derived_from_the_inputs_only():
    """The same inputs give the same key in any key order; other inputs another key."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed")
    script = """
      const { idempotencyKey } = require('./lib/idempotency');
      const a = idempotencyKey({ email: 'j@x.com', metadata: { b: 1, a: 2 } });
      const b = idempotencyKey({ metadata: { a: 2, b: 1 }, email: 'j@x.com' });
      const c = idempotencyKey({ email: 'j@x.com', metadata: { b: 1, a: 2 } }, 'job-7');
      console.log(JSON.stringify([a, b, c]));
    """
    result = subprocess.run(
        [node, "-e", script], cwd=APP_DIR, capture_output=True, text=True, timeout=60
    )
    a, b, c = json.loads(result.stdout)
    assert a == b
    assert a != c
    assert a.startswith("zapier-") and len(a) <= 255


def test_the_app_never_writes_a_secret_into_its_source():
    for path in Path(APP_DIR).rglob("*.js"):
        if "node_modules" in path.parts:
            continue
        text = path.read_text()
        assert CLIENT_SECRET not in text
        assert "client_secret: '" not in text, path
