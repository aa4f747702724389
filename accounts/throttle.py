"""Limits on logging in (the owners' login page and the admin's) and on password-reset requests.

**Login: one throttle for both pages, counting failures only.** A network is an IPv4 address or
an IPv6 /64 (``core.ratelimit.client_network``); a *pair* is an address (as typed, unknown
addresses included) on a network. Every password check costs PBKDF2 (~0.4 s of CPU, for
unknown addresses too), so every limit below is decided before the password is checked, and
an attempt past one answers 429 with the time left without checking it. Two limits:

* **per pair**: ``LOGIN_FAILURES_PER_PAIR`` failed attempts within a window
  (``RATE_LIMIT_WINDOW_SECONDS``, an hour from the pair's first attempt) lock that pair until
  the window ends;
* **per network, for pairs without standing**: a pair has *standing* when that address logged
  in successfully from that network within ``LOGIN_STANDING_DAYS``. The failures of pairs
  without standing are counted per network too, ``settings.LOGIN_NEW_PAIR_FAILURES_PER_NETWORK``
  per window; past it, an attempt of a pair without standing from that network answers 429 at
  once. Pairs with standing are not counted there and are never refused by it: a network
  cycling through addresses costs at most that budget plus ``LOGIN_FAILURES_PER_PAIR`` per pair
  with standing of password checks per window, and the people who logged in from there before
  still log in.

Each attempt is counted *before* the password is checked and taken back if it succeeds:
simultaneous guesses still get at most that many password checks, and a successful login never
counts against anyone. Nothing else is locked: the same address from another network is a
pair of its own, so nobody can lock an owner or a staff member out from elsewhere, and another
address from the same network (a shared office) is locked only if it has no standing there and
the network's budget is used up. Setting a new password through a reset link lifts the lock of
that address on the network it was set from and gives the pair standing there; ``manage.py
login_unlock`` does both by hand.

**Password reset requests** cannot fail (the page answers the same for any address), so every
request counts, per address and per network, at limits generous enough for a person.

Counted in the rate-limit store the API uses (``core.ratelimit``: Redis with ``REDIS_URL``, else
one atomic database upsert), under keys of their own; standing is a mark in the same store
that expires ``LOGIN_STANDING_DAYS`` after the pair's last successful login. A store outage lets
requests through (fail open), as the API does.
"""

from __future__ import annotations

import hashlib
import logging
import math
from typing import TypeVar

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase

from core.ratelimit import client_network
from core.ratelimit_store import Usage, get_limiter

from .models import UserManager

logger = logging.getLogger(__name__)

Response = TypeVar("Response", bound=HttpResponseBase)

# Per window (an hour).
LOGIN_FAILURES_PER_PAIR = 10
RESET_PER_ADDRESS = 5
RESET_PER_IP = 50  # per network
# A successful login gives its pair standing for this long (renewed by each success).
LOGIN_STANDING_DAYS = 30


def _address_key(email: str) -> str:
    # Hashed: the key holds whatever was typed, of any length, and no address in clear.
    address = UserManager.normalize_email(email)
    return hashlib.sha256(address.encode("utf-8", "replace")).hexdigest()[:32]


def _login_bucket(email: str, network: str) -> str:
    return f"accounts:login:{_address_key(email)}:{network}"


def _standing_bucket(email: str, network: str) -> str:
    return f"accounts:login-standing:{_address_key(email)}:{network}"


def _new_pairs_bucket(network: str) -> str:
    return f"accounts:login-new-pairs:{network}"


def _give_standing(email: str, network: str) -> None:
    get_limiter().remember(_standing_bucket(email, network), seconds=LOGIN_STANDING_DAYS * 86400)


def _in_minutes(usage: Usage) -> str:
    minutes = math.ceil(usage.retry_after() / 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


class LoginAttempt:
    """One login POST for ``email`` from the request's network, counted as a failure until
    ``finish`` sees it succeed. ``locked``: refused before any password check."""

    def __init__(self, request: HttpRequest, email: str) -> None:
        self.request = request
        self.email = email
        self.network = client_network(request)
        self.bucket = _login_bucket(email, self.network)
        self.new_pairs_bucket = _new_pairs_bucket(self.network)
        self.counted_new_pair = False
        self.refused_by: Usage | None = None  # the full bucket, when refused
        self.network_full = False  # refused by the network's budget (not the pair's limit)
        limiter = get_limiter()
        budget = settings.LOGIN_NEW_PAIR_FAILURES_PER_NETWORK
        # One round trip: the pair's standing and the network's budget, before counting.
        standing, new_pairs = limiter.peek(
            _standing_bucket(email, self.network), self.new_pairs_bucket, limit=budget
        )
        self.has_standing = standing.count > 0
        if not self.has_standing and new_pairs.enforced and new_pairs.count >= budget:
            self._refuse(new_pairs, network_full=True)  # nothing counted: the flood's path
            return
        usage = limiter.hit(self.bucket, limit=LOGIN_FAILURES_PER_PAIR)
        if usage.enforced and usage.count == LOGIN_FAILURES_PER_PAIR + 1:
            logger.warning(
                "login locked for an address and network",
                extra={"network": self.network, "address_key": _address_key(email)},
            )
        if usage.exceeded:
            self._refuse(usage, network_full=False)
            return
        if not self.has_standing:
            counted = limiter.hit(self.new_pairs_bucket, limit=budget)
            self.counted_new_pair = True
            if counted.enforced and counted.count == budget:
                logger.warning(
                    "login budget for new addresses used up on a network",
                    extra={"network": self.network, "limit": budget},
                )
            if counted.exceeded:  # simultaneous attempts raced past the peek
                limiter.release(self.bucket)  # no password checked: not a failure of the pair
                self._refuse(counted, network_full=True)

    def _refuse(self, usage: Usage, *, network_full: bool) -> None:
        self.refused_by = usage
        self.network_full = network_full

    @property
    def locked(self) -> bool:
        return self.refused_by is not None

    @property
    def message(self) -> str:
        assert self.refused_by is not None, "only a refused attempt has a message"
        wait = _in_minutes(self.refused_by)
        if self.network_full:
            return (
                f"Too many failed login attempts from your network for addresses that have not "
                f"logged in from it recently. Try again in {wait}, log in from a network you "
                f"have used before, or reset your password."
            )
        return (
            f"Too many login attempts for this address from your network. Try again in "
            f"{wait}, or reset your password."
        )

    def finish(self, response: Response) -> Response:
        """Take the attempt back if it logged someone in (Django's login redirects), and give
        the pair standing."""
        if response.status_code in (301, 302, 303) and self.request.user.is_authenticated:
            limiter = get_limiter()
            limiter.release(self.bucket)
            if self.counted_new_pair:
                limiter.release(self.new_pairs_bucket)
            _give_standing(self.email, self.network)
        return response


def login_unlock(*, email: str, network: str) -> None:
    """Lift the lock of ``email`` on ``network`` (an IPv4 address or an IPv6 /64) and give the
    pair standing there (it then logs in even while the network's budget for new addresses is
    used up). Raises ``core.ratelimit_store.StoreUnavailable`` if the store cannot be reached."""
    get_limiter().clear(_login_bucket(email, network))
    _give_standing(email, network)


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
