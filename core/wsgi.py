"""WSGI middleware around Django's application (``config/wsgi.py``).

``ChunkedRequestBody``: request bodies sent with ``Transfer-Encoding: chunked`` (no
``Content-Length``) are read, not seen as empty.

gunicorn decodes the chunks and says that ``wsgi.input`` ends where the body ends
(``wsgi.input_terminated``), but Django reads exactly ``CONTENT_LENGTH`` bytes, so without that
header it reads nothing: a valid JSON contact became 400 "give an e-mail or phone", a 10 MB body
a 400 instead of a 413. Like a buffering proxy, this reads such a body into memory, up to
``DATA_UPLOAD_MAX_MEMORY_SIZE`` (the API's 1 MB body limit), and hands it to Django with its
``CONTENT_LENGTH``; Django then sees exactly what a client sending ``Content-Length`` gets. The
limit holds for file uploads too (browsers never chunk; a client uploading more sends a
``Content-Length``).

A longer body is answered here, before Django: 413 ``request_too_large`` (the API's JSON error
under ``/api/``, plain text elsewhere). The rest of the body is read and thrown away first, up to
``DISCARD_LIMIT_BYTES``, so that the client, which is still sending, reads the answer instead
of a reset connection; past that, the connection is closed unread.

Servers that do not set ``wsgi.input_terminated`` (Django's ``runserver``) are left alone: for
them, reading to the end of ``wsgi.input`` could wait forever.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.conf import settings
from django.http import HttpResponse

from .errors import REQUEST_TOO_LARGE, error_response

if TYPE_CHECKING:
    from wsgiref.types import InputStream, StartResponse, WSGIApplication, WSGIEnvironment

logger = logging.getLogger(__name__)

# Read this much at a time.
READ_SIZE = 64 * 1024
# A body over the limit is read and discarded up to this many bytes more, then the connection is
# closed (gunicorn's worker timeout bounds how long a slow sender can take).
DISCARD_LIMIT_BYTES = 32 * 1024 * 1024


def _has_chunked_body(environ: WSGIEnvironment) -> bool:
    return (
        bool(environ.get("wsgi.input_terminated"))
        and not environ.get("CONTENT_LENGTH")
        and "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
    )


def _read_body(stream: InputStream, limit: int | None) -> bytes | None:
    """The whole body, or ``None`` if it is longer than ``limit`` bytes (the rest discarded)."""
    pieces: list[bytes] = []
    size = 0
    while True:
        want = READ_SIZE if limit is None else min(READ_SIZE, limit + 1 - size)
        piece = stream.read(want)
        if not piece:
            return b"".join(pieces)
        pieces.append(piece)
        size += len(piece)
        if limit is not None and size > limit:
            discarded = 0
            while discarded < DISCARD_LIMIT_BYTES and (piece := stream.read(READ_SIZE)):
                discarded += len(piece)
            return None


class ChunkedRequestBody:
    def __init__(self, application: WSGIApplication) -> None:
        self.application = application

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if not _has_chunked_body(environ):
            return self.application(environ, start_response)
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        body = _read_body(environ["wsgi.input"], limit)
        if body is None:
            return self._too_large(environ, start_response, limit)
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        del environ["HTTP_TRANSFER_ENCODING"]  # the body is no longer chunked
        return self.application(environ, start_response)

    @staticmethod
    def _too_large(
        environ: WSGIEnvironment, start_response: StartResponse, limit: int
    ) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        logger.warning(
            "chunked request body over %d bytes refused on %s %s",
            limit,
            environ.get("REQUEST_METHOD"),
            path,
        )
        response: HttpResponse
        if path.startswith("/api/"):
            response = error_response(413, *REQUEST_TOO_LARGE)
        else:
            response = HttpResponse(
                "The request body is too large.\n",
                status=413,
                content_type="text/plain; charset=utf-8",
            )
        start_response(f"{response.status_code} {response.reason_phrase}", list(response.items()))
        return [response.content]
