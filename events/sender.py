"""One webhook call: a POST bounded in wall-clock time as a whole, to an address already vetted.

* **Bounded time.** ``timeout`` seconds cover everything after the target's name was resolved:
  connecting, the TLS handshake, sending, the answer's status line and headers, and the bounded
  read of its body. Socket timeouts alone bound each read, so a receiver dripping one byte per
  second could hold a worker for as long as it liked; here a timer shuts the connection down at
  the deadline (``shutdown()`` on a duplicate of the socket: whatever read or write is blocked
  returns at once), and the call ends as timed out.
* **Pinned address.** The connection goes to one of the addresses ``target_url_check`` returned
  (the ones it checked), never to a fresh lookup of the name, so a name re-pointed between the
  check and the connection (DNS rebinding) cannot reach a private address. The host name is
  still what the receiver sees: in TLS (SNI, and the certificate is verified against it) and in
  the ``Host`` header.
* No proxy, no redirects (a 3xx is an answer like any other), no keep-alive.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
from urllib.parse import urlsplit

# requests' CA bundle (certifi's, unless a distribution repackaged requests.certs).
from requests.certs import where as ca_bundle  # type: ignore[attr-defined]  # not in types-requests

MAX_BODY = 1024  # bytes of a receiver's answer read (kept, shortened, as the last error)


class CallTimedOut(Exception):
    """No complete answer (status, headers, bounded body) before the deadline."""


class CallFailed(Exception):
    """No answer: refused, reset, TLS failure, malformed answer. The message says which."""


class _PinnedConnection(http.client.HTTPConnection):
    """An HTTP connection over a socket the caller opened (to the vetted address)."""

    def __init__(self, host: str, port: int, sock: socket.socket) -> None:
        super().__init__(host, port)
        self.pinned_sock = sock

    def connect(self) -> None:
        self.sock = self.pinned_sock


def post(
    *, url: str, addresses: list[str], body: bytes, headers: dict[str, str], timeout: float
) -> tuple[int, bytes]:
    """POST ``body`` to ``url``, connected to the first of ``addresses`` that accepts, within
    ``timeout`` seconds in all; returns the status and the first ``MAX_BODY`` bytes of the
    answer. Raises ``CallTimedOut`` or ``CallFailed``; never follows a redirect."""
    deadline = time.monotonic() + timeout
    parts = urlsplit(url)
    tls = parts.scheme.lower() == "https"
    host = parts.hostname or ""
    port = parts.port or (443 if tls else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    raw = _connect(addresses, port, deadline)
    try:
        cutter = raw.dup()  # shutting it down ends any blocked read or write on the connection
    except OSError as exc:
        raw.close()
        raise CallFailed(f"could not connect: {_error_name(exc)}") from None
    watchdog = threading.Timer(max(deadline - time.monotonic(), 0), _cut, args=(cutter,))
    watchdog.daemon = True
    watchdog.start()
    sock: socket.socket = raw
    try:
        if tls:
            context = ssl.create_default_context(cafile=ca_bundle())
            sock = context.wrap_socket(raw, server_hostname=host)
        connection = _PinnedConnection(host, port, sock)
        connection.request(
            "POST", target, body=body, headers={"Host": _host_header(host, port, tls), **headers}
        )
        response = connection.getresponse()
        head = response.read(MAX_BODY)
        if time.monotonic() >= deadline:
            raise CallTimedOut
        return response.status, head
    except (OSError, http.client.HTTPException) as exc:
        if time.monotonic() >= deadline or isinstance(exc, TimeoutError):
            raise CallTimedOut from None
        raise CallFailed(f"no valid answer: {_error_name(exc)}") from None
    finally:
        watchdog.cancel()
        sock.close()
        raw.close()
        cutter.close()


def _connect(addresses: list[str], port: int, deadline: float) -> socket.socket:
    """A TCP connection to the first address that accepts one before the deadline."""
    error: OSError | None = None
    for address in addresses:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise CallTimedOut
        try:
            return socket.create_connection((address, port), timeout=remaining)
        except TimeoutError:
            raise CallTimedOut from None
        except OSError as exc:
            error = exc
    raise CallFailed(f"could not connect: {_error_name(error) if error else 'no address'}")


def _cut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _host_header(host: str, port: int, tls: bool) -> str:
    name = f"[{host}]" if ":" in host else host
    return name if port == (443 if tls else 80) else f"{name}:{port}"


def _error_name(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate not valid for this host ({exc.verify_message})"
    return type(exc).__name__
