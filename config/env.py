"""Reading the environment for config/settings.py: secrets, the site URL, small parsers.

Nothing here is a setting; settings.py assigns every one of them. Imports no app code.
"""

from __future__ import annotations

import secrets
import tomllib
from email.utils import getaddresses
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

# The one reader of the environment; settings.py also fills it from a local .env file.
env = environ.Env()


def secret_env(name: str, default: str = "") -> str:
    """A secret from ``NAME``, or from the file ``NAME_FILE`` names (Docker and Kubernetes
    secrets mount files, which keeps the value out of the process environment). Setting both
    is an error; the file's trailing newline is dropped."""
    path = env(f"{name}_FILE", default="")
    if not path:
        return env(name, default=default)
    if env(name, default=""):
        raise ImproperlyConfigured(f"Set {name} or {name}_FILE, not both.")
    try:
        return Path(path).read_text().rstrip("\r\n")
    except OSError as exc:
        raise ImproperlyConfigured(f"{name}_FILE: cannot read {path}: {exc}") from exc


def stored_secret_key(path: Path) -> str:
    """The embedded mode's secret key: generated once and kept in ``path`` (under var/) so
    sessions survive restarts."""
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


class Site(NamedTuple):
    """The parts of SITE_URL the other settings derive from."""

    scheme: str
    hostname: str
    netloc: str


def site_parts(site_url: str) -> Site:
    """SITE_URL's scheme, host name and host[:port]; anything but an absolute http(s) URL is an
    error."""
    site = urlsplit(site_url)
    if site.scheme not in ("http", "https") or not site.hostname:
        raise ImproperlyConfigured(f"SITE_URL must be an absolute http(s) URL, got {site_url!r}")
    return Site(scheme=site.scheme, hostname=site.hostname, netloc=site.netloc)


def admins(addresses: str) -> list[tuple[str, str]]:
    """``"Ops <ops@example.com>, oncall@example.com"`` as Django's ADMINS: (name, address)."""
    return [(name, address) for name, address in getaddresses([addresses]) if address]


def project_version(pyproject: Path) -> str:
    """The version in pyproject.toml's [project] table."""
    version: str = tomllib.loads(pyproject.read_text())["project"]["version"]
    return version


def require(condition: bool, message: str) -> None:
    """Refuse to start on settings that contradict each other."""
    if not condition:
        raise ImproperlyConfigured(message)
