"""Request bodies sent with ``Transfer-Encoding: chunked`` through a real gunicorn: a contact is
read, and a 10 MB body is answered 413 at once."""

from __future__ import annotations

import http.client
import json
import time

import pytest
import requests

from reviews.models import Contact
from tests.support.oauth import issue_tokens

pytestmark = pytest.mark.django_db(transaction=True)


SEND = "/api/zapier/send-review-request"


CONTACT = json.dumps({"first_name": "Chunk", "email": "chunk@example.com"}).encode()


MB = 1024 * 1024


@pytest.mark.processes
def test_gunicorn_accepts_a_chunked_contact_and_refuses_a_10_mb_chunked_body_with_413(tmp_path):
    from tests.factories import UserFactory
    from tests.support.processes import ServiceProcesses

    owner = UserFactory()
    access, _ = issue_tokens(owner)
    headers = {
        "Authorization": f"Bearer {access}",
        "Content-Type": "application/json",
        "Transfer-Encoding": "chunked",
    }

    def post_chunked(port: int, pieces) -> tuple[int, dict]:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request("POST", SEND, body=pieces, headers=headers, encode_chunked=True)
            response = conn.getresponse()
            return response.status, json.loads(response.read())
        finally:
            conn.close()

    with ServiceProcesses(tmp_path, ["web"]) as svc:
        svc.wait_for(lambda: requests.get(f"{svc.base_url}/healthz", timeout=2).ok, what="web")
        accepted = post_chunked(svc.port, iter([CONTACT[:10], CONTACT[10:]]))
        started = time.monotonic()
        refused = post_chunked(svc.port, (b"x" * MB for _ in range(10)))
        elapsed = time.monotonic() - started
    assert accepted[0] == 201, accepted
    assert accepted[1]["contact_email"] == "chunk@example.com"
    assert Contact.objects.filter(owner=owner).count() == 1
    assert refused == (413, refused[1]) and refused[1]["error"] == "request_too_large", refused
    assert elapsed < 10
