"""Request bodies sent with ``Transfer-Encoding: chunked`` (no Content-Length) are read up to the
1 MB body limit, and answered 413 past it: through the WSGI application as gunicorn calls it,
and through a real gunicorn."""

from __future__ import annotations

import io
import json
from wsgiref.util import setup_testing_defaults

import pytest

from config.wsgi import application
from reviews.models import Contact
from tests.support.oauth import issue_tokens

pytestmark = pytest.mark.django_db(transaction=True)

SEND = "/api/zapier/send-review-request"
CONTACT = json.dumps({"first_name": "Chunk", "email": "chunk@example.com"}).encode()
MB = 1024 * 1024


def call_wsgi(path: str, body: bytes, *, chunked: bool = True, **headers: str):
    """Call the WSGI application the way gunicorn does for a de-chunked body."""
    environ: dict = {}
    setup_testing_defaults(environ)
    environ.update(
        REQUEST_METHOD="POST",
        PATH_INFO=path,
        HTTP_HOST="testserver",
        CONTENT_TYPE="application/json",
        **{"wsgi.input": io.BytesIO(body), "wsgi.input_terminated": True},
        **headers,
    )
    environ.pop("CONTENT_LENGTH", None)
    if chunked:
        environ["HTTP_TRANSFER_ENCODING"] = "chunked"
    else:
        environ["CONTENT_LENGTH"] = str(len(body))
    answer: dict = {}

    def start_response(status, response_headers, exc_info=None):
        answer["status"] = int(status.split()[0])
        answer["headers"] = dict(response_headers)

    content = b"".join(application(environ, start_response))
    return answer["status"], answer["headers"], content


def test_a_chunked_json_body_is_read(owner):
    access, _ = issue_tokens(owner)
    status, _, content = call_wsgi(SEND, CONTACT, HTTP_AUTHORIZATION=f"Bearer {access}")
    assert status == 201, content
    assert Contact.objects.get(owner=owner).email == "chunk@example.com"


def test_a_chunked_body_over_the_limit_is_413(owner):
    access, _ = issue_tokens(owner)
    too_big = b'{"email": "' + b"a" * MB + b'@example.com"}'
    status, headers, content = call_wsgi(SEND, too_big, HTTP_AUTHORIZATION=f"Bearer {access}")
    assert status == 413
    assert headers["Content-Type"] == "application/json"
    assert json.loads(content)["error"] == "request_too_large"
    page_status, page_headers, _ = call_wsgi("/accounts/login/", too_big)
    assert page_status == 413
    assert page_headers["Content-Type"].startswith("text/plain")
    assert not Contact.objects.exists()


def test_a_chunked_body_of_exactly_the_limit_reaches_django(owner):
    """1 MB of JSON is within the limit (unknown keys are ignored)."""
    access, _ = issue_tokens(owner)
    padded = CONTACT[:-1] + b', "padding": "' + b"n" * MB + b'"}'
    padded = padded[: MB - 2] + b'"}'
    assert len(padded) == MB
    status, _, content = call_wsgi(SEND, padded, HTTP_AUTHORIZATION=f"Bearer {access}")
    assert status == 201, content[:300]


def test_bodies_with_a_content_length_are_left_alone(owner):
    access, _ = issue_tokens(owner)
    status, _, _ = call_wsgi(SEND, CONTACT, chunked=False, HTTP_AUTHORIZATION=f"Bearer {access}")
    assert status == 201
