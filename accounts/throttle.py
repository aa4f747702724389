"""Limits on logging in (the owners' login page and the admin's) and on password-reset requests.

**Login: one throttle for both pages, counting failures only, per (address, network).** A
network is an IPv4 address or an IPv6 /64 (``core.ratelimit.client_network``). After
``LOGIN_FAILURES_PER_PAIR`` failed attempts of one pair (unknown addresses included) within a
window, every further attempt of that pair answers 429 with the time left, without checking the
password, until the window ends (``RATE_LIMIT_WINDOW_SECONDS``, an hour from the pair's first
attempt). Each attempt is counted *before* the password is checked and taken back if it
succeeds: simultaneous guesses still get at most that many password checks, and a successful
login never counts. Nothing else is locked: the same address from another network, or another
address from the same network (a shared office), logs in as usual, so nobody can lock an owner
or a staff member out from elsewhere. Setting a new password through a reset link lifts the
lock of that address on the network it was set from; ``manage.py login_unlock`` lifts one by
hand.

**Password reset requests** cannot fail (the page answers the same for any address), so every
request counts, per address and per network, at limits generous enough for a person.

Counted in the rate-limit store the API uses (``core.ratelimit``: Redis with ``REDIS_URL``, else
one atomic database upsert), under keys of their own. A store outage lets requests through (fail
open), as the API does.
"""

from __future__ import annotations

import hashlib
import logging
import math

from django.http import HttpRequest, HttpResponse

from core.ratelimit import client_network
from core.ratelimit_store import Usage, get_limiter

from .models import UserManager

logger = logging.getLogger(__name__)

# Per window (an hour).
LOGIN_FAILURES_PER_PAIR = 10
RESET_PER_ADDRESS = 5
RESET_PER_IP = 50  # per network


def _address_key(email: str) -> str:
    # Hashed: the key holds whatever was typed, of any length, and no address in clear.
    address = UserManager.normalize_email(email)
    return hashlib.sha256(address.encode("utf-8", "replace")).hexdigest()[:32]


def _login_bucket(email: str, network: str) -> str:
    return f"accounts:login:{_address_key(email)}:{network}"


class LoginAttempt:
    """One login POST for ``email`` from the request's network, counted as a failure until
    ``finish`` sees it succeed."""

    def __init__(self, request: HttpRequest, email: str) -> None:
        self.request = request
        self.bucket = _login_bucket(email, client_network(request))
        self.usage: Usage = get_limiter().hit(self.bucket, limit=LOGIN_FAILURES_PER_PAIR)
        if self.usage.enforced and self.usage.count == LOGIN_FAILURES_PER_PAIR + 1:
            logger.warning(
                "login locked for an address and network",
                extra={"network": client_network(request), "address_key": _address_key(email)},
            )

    @property
    def locked(self) -> bool:
        return self.usage.exceeded

    @property
    def message(self) -> str:
        minutes = math.ceil(self.usage.retry_after() / 60)
        return (
            f"Too many login attempts for this address from your network. Try again in "
            f"{minutes} minute{'s' if minutes != 1 else ''}, or reset your password."
        )

    def finish(self, response: HttpResponse) -> HttpResponse:
        """Take the attempt back if it logged someone in (Django's login redirects)."""
        if response.status_code in (301, 302, 303) and self.request.user.is_authenticated:
            get_limiter().release(self.bucket)
        return response


def login_unlock(*, email: str, network: str) -> None:
    """Lift the lock of ``email`` on ``network`` (an IPv4 address or an IPv6 /64). Raises
    ``core.ratelimit_store.StoreUnavailable`` if the store cannot be reached."""
    get_limiter().clear(_login_bucket(email, network))


def _allowed(buckets: dict[str, int]) -> bool:
    """Count one request in every bucket; True if none is over its limit."""
    limiter = get_limiter()
    allowed = True
    for bucket, limit in buckets.items():
        if limiter.hit(f"accounts:{bucket}", limit=limit).exceeded:
            allowed = False
    return allowed


def password_reset_allowed(request: HttpRequest, email: str) -> bool:
    return _allowed(
        {
            f"reset:{_address_key(email)}": RESET_PER_ADDRESS,
            f"reset-ip:{client_network(request)}": RESET_PER_IP,
        }
    )
