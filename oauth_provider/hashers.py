"""The hash client secrets are stored under: HMAC-SHA256, keyed from ``SECRET_KEY``.

Client secrets are long random strings (128 characters when generated; operators who set their
own with ``createapplication --client-secret`` are told to use a long random one): no guess at
one succeeds however fast a guess is, so a slow hash such as PBKDF2 protects nothing that the
entropy does not already protect, while costing ~0.4 s of CPU on every token request, wrong
secrets included, which anyone can send. This hasher checks a secret in microseconds.

Stored form: ``hmac_sha256$<key id>$<salt>$<hex digest>``, the digest being HMAC-SHA256 of
``<salt>$<secret>`` under a key derived from ``SECRET_KEY`` (Django's ``salted_hmac``). The salt
makes equal secrets hash apart; the key means a copy of the database alone does not let anyone
test guesses at a weak operator-set secret. The key id (a digest of the key, revealing nothing
about it) says which key a hash was made with, so a ``SECRET_KEY`` rotation keeps working: a
hash made under a key now in ``SECRET_KEY_FALLBACKS`` still verifies, and is re-made under the
current key at the client's next successful authentication (``must_update``).

Owner and staff passwords are not hashed with this: people choose guessable passwords, and
Django's PBKDF2 stays their hasher (the first entry of ``PASSWORD_HASHERS``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth.hashers import BasePasswordHasher, mask_hash
from django.utils.crypto import constant_time_compare, salted_hmac
from django.utils.translation import gettext_noop as _

if TYPE_CHECKING:  # django-stubs-ext is a development dependency
    from django_stubs_ext import StrOrPromise

ALGORITHM = "hmac_sha256"
_KEY_SALT = "oauth_provider.hashers.ClientSecretHasher"


def _key_id(secret_key: str) -> str:
    return salted_hmac(
        f"{_KEY_SALT}.key-id", "", secret=secret_key, algorithm="sha256"
    ).hexdigest()[:12]


def _digest(secret: str, salt: str, secret_key: str) -> str:
    return salted_hmac(
        _KEY_SALT, f"{salt}${secret}", secret=secret_key, algorithm="sha256"
    ).hexdigest()


class ClientSecretHasher(BasePasswordHasher):
    """HMAC-SHA256 under a key derived from ``SECRET_KEY``; for high-entropy client secrets only."""

    algorithm = ALGORITHM

    def encode(self, password: str, salt: str) -> str:
        if password is None or not salt or "$" in salt:
            raise ValueError("a secret and a salt without '$' are required")
        key = settings.SECRET_KEY
        return f"{ALGORITHM}${_key_id(key)}${salt}${_digest(password, salt, key)}"

    def decode(self, encoded: str) -> dict[str, str]:
        algorithm, key_id, salt, digest = encoded.split("$", 3)
        assert algorithm == self.algorithm
        return {"algorithm": algorithm, "key_id": key_id, "salt": salt, "hash": digest}

    def verify(self, password: str, encoded: str) -> bool:
        try:
            decoded = self.decode(encoded)
        except ValueError:
            return False
        for secret_key in (settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS):
            if _key_id(secret_key) == decoded["key_id"]:
                digest = _digest(password, decoded["salt"], secret_key)
                return constant_time_compare(digest, decoded["hash"])
        return False  # made under a key that is no longer configured

    def must_update(self, encoded: str) -> bool:
        return self.decode(encoded)["key_id"] != _key_id(settings.SECRET_KEY)

    def safe_summary(self, encoded: str) -> dict[StrOrPromise, str]:
        decoded = self.decode(encoded)
        return {
            _("algorithm"): decoded["algorithm"],
            _("key id"): decoded["key_id"],
            _("salt"): mask_hash(decoded["salt"], show=2),
            _("hash"): mask_hash(decoded["hash"]),
        }

    def harden_runtime(self, password: str, encoded: str) -> None:
        pass  # no work factor to even out
