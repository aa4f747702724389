"""Standard Webhooks signatures (https://www.standardwebhooks.com/).

Each call carries ``webhook-id`` (the event id: the same on every retry, the receiver's dedup
key), ``webhook-timestamp`` (Unix seconds of this attempt) and ``webhook-signature``:
``v1,`` + base64(HMAC-SHA256(key, "<id>.<timestamp>.<body>")), where the key is the base64
part of the subscription's ``whsec_`` secret. docs/events.md shows how to verify it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32


def secret_new() -> str:
    """A fresh subscription secret: ``whsec_`` + base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def signature(*, secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header value for one attempt."""
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signed_headers(*, secret: str, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(
            secret=secret, msg_id=msg_id, timestamp=timestamp, body=body
        ),
    }
