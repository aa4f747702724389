"""The API's rate limits through a real gunicorn: real sockets, REMOTE_ADDR from the connection."""

from __future__ import annotations

import pytest
import requests

from tests.support.oauth import issue_tokens

pytestmark = pytest.mark.django_db


ME = "/api/zapier/me"


@pytest.mark.processes
def test_a_live_server_answers_429_with_headers(tmp_path, transactional_db):
    """The same contract through gunicorn (real sockets, REMOTE_ADDR from the connection)."""
    from tests.factories import UserFactory
    from tests.support.processes import ServiceProcesses

    access, _ = issue_tokens(UserFactory())
    with ServiceProcesses(tmp_path, ["web"], env={"RATE_LIMIT_PER_HOUR": "2"}) as svc:
        svc.wait_for(lambda: requests.get(f"{svc.base_url}/healthz", timeout=2).ok, what="web")
        with requests.Session() as http:
            http.headers["Authorization"] = f"Bearer {access}"
            answers = [http.get(f"{svc.base_url}{ME}", timeout=5) for _ in range(3)]
            anonymous = [
                requests.get(f"{svc.base_url}/api/zapier/nope", timeout=5) for _ in range(3)
            ]
    assert [r.status_code for r in answers] == [200, 200, 429]
    assert [r.headers["X-RateLimit-Remaining"] for r in answers] == ["1", "0", "0"]
    assert answers[2].headers["Retry-After"].isdigit()
    assert [r.status_code for r in anonymous] == [404, 404, 429]
