"""URL converter for the automation-platform slug (``zapier`` by default).

``/api/<platform>/...`` and ``/api/oauth/<platform>/...`` match only the slugs listed in
``settings.CONNECTOR_PLATFORMS``, so adding a platform is a setting, not code.
"""

from __future__ import annotations

import re

from django.conf import settings


class PlatformConverter:
    def __init__(self) -> None:
        self.regex = "|".join(re.escape(slug) for slug in settings.CONNECTOR_PLATFORMS)

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        if value not in settings.CONNECTOR_PLATFORMS:
            raise ValueError(f"unknown platform {value!r}")
        return value
