"""Where webhooks may go: ``https`` to a public address, checked when a subscription is made
and again right before every call (a name may resolve elsewhere later).

Refused: another scheme, a URL without a host, and any name that resolves (or an IP literal
that is) to a private, loopback, link-local (cloud metadata: 169.254.169.254), shared,
multicast, reserved or unspecified address, including IPv4 addresses embedded in IPv6.
``WEBHOOK_ALLOW_PRIVATE_TARGETS`` (local development and tests only) also allows ``http`` and
loopback or private addresses; link-local, multicast and the rest stay refused.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

MAX_URL_LENGTH = 2000


class UnsafeTarget(ValueError):
    """The URL may not receive webhooks; the message says why, in words for the owner."""


Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def target_url_check(url: str) -> list[str]:
    """Validate ``url`` and resolve its host; returns the addresses it resolves to, all
    allowed. Raises ``UnsafeTarget``."""
    allow_private = settings.WEBHOOK_ALLOW_PRIVATE_TARGETS
    if not isinstance(url, str) or not url:
        raise UnsafeTarget("target_url is required.")
    if len(url) > MAX_URL_LENGTH:
        raise UnsafeTarget(f"target_url is longer than {MAX_URL_LENGTH} characters.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise UnsafeTarget("target_url is not a valid URL.") from None
    schemes = ("https", "http") if allow_private else ("https",)
    if parts.scheme.lower() not in schemes:
        raise UnsafeTarget("target_url must be an https:// URL.")
    host = parts.hostname
    if not host:
        raise UnsafeTarget("target_url has no host name.")
    port = port or (443 if parts.scheme.lower() == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise UnsafeTarget(f"The host name {host} does not resolve.") from None
    # An IPv4 or IPv6 sockaddr starts with the address as a string (typeshed allows an int).
    addresses = sorted({str(info[4][0]) for info in infos})
    if not addresses:
        raise UnsafeTarget(f"The host name {host} does not resolve.")
    for text in addresses:
        if not address_allowed(ipaddress.ip_address(text.split("%", 1)[0]), allow_private):
            raise UnsafeTarget(
                f"target_url resolves to {text}, a private or reserved address; webhooks go "
                "only to public internet addresses."
            )
    return addresses


def address_allowed(address: Address, allow_private: bool) -> bool:
    """A public unicast address; with ``allow_private``, loopback and private ones too."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address.teredo:
            embedded = address.teredo[1]
        if embedded is not None:
            return address_allowed(embedded, allow_private)
    if (
        address.is_multicast
        or address.is_link_local
        or address.is_unspecified
        or address.is_reserved
    ):
        return False
    if address.is_global:
        return True
    return allow_private and (address.is_loopback or address.is_private)
