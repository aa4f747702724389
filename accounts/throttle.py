"""Hourly limits on login attempts and password-reset requests, per address and per network.

Counted in the rate-limit store the API uses too (``core.ratelimit``: Redis with
``REDIS_URL``, else one atomic database upsert), in fixed hourly windows, under keys of their
own. A store outage lets requests through (fail open), as the API does: these limits slow
guessing and mail floods; they are not what keeps an account safe.
"""

from __future__ import annotations

import hashlib

from django.http import HttpRequest

from core.ratelimit import client_ip, get_limiter

from .models import UserManager

# Per hour. Counting every attempt, successful or not: a person needs a handful.
LOGIN_PER_ADDRESS_AND_IP = 10
LOGIN_PER_IP = 100
RESET_PER_ADDRESS = 3
RESET_PER_IP = 20


def _address_key(email: str) -> str:
    # Hashed: the key holds whatever was typed, of any length, and no address in clear.
    address = UserManager.normalize_email(email)
    return hashlib.sha256(address.encode("utf-8", "replace")).hexdigest()[:32]


def _allowed(buckets: dict[str, int]) -> bool:
    """Count one attempt in every bucket; True if none is over its limit."""
    limiter = get_limiter()
    allowed = True
    for bucket, limit in buckets.items():
        if limiter.hit(f"accounts:{bucket}", limit=limit).exceeded:
            allowed = False
    return allowed


def login_allowed(request: HttpRequest, email: str) -> bool:
    ip = client_ip(request)
    return _allowed(
        {
            f"login:{_address_key(email)}:{ip}": LOGIN_PER_ADDRESS_AND_IP,
            f"login-ip:{ip}": LOGIN_PER_IP,
        }
    )


def password_reset_allowed(request: HttpRequest, email: str) -> bool:
    return _allowed(
        {
            f"reset:{_address_key(email)}": RESET_PER_ADDRESS,
            f"reset-ip:{client_ip(request)}": RESET_PER_IP,
        }
    )
