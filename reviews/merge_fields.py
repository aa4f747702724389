"""Merge fields in message templates: ``{first_name}``, ``{review_link}``...

Templates are written by business owners, so they are never rendered by a template engine
(Django templates or ``str.format`` would expose attribute access, filters or format specs:
server-side template injection and memory blow-ups). A template is plain text in which exactly
``{name}`` for a known name is replaced, ``{{`` and ``}}`` stand for literal braces, and
anything else in braces is an error found when the template is saved.

Pure functions, no Django.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

MERGE_FIELDS: dict[str, str] = {
    "first_name": "The contact's first name, or “there” when unknown (“Hi there”).",
    "contact_name": "The contact's full name, or “there” when unknown.",
    "business_name": "Your business name.",
    "review_link": "The link to your review page (required).",
    "company_name": "The contact's company, or “your company” when unknown.",
}

_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


class MergeFieldError(ValueError):
    """A template that cannot be rendered: unknown fields or unmatched braces."""


def fields_used(template: str) -> list[str]:
    """The merge fields a template uses, in order of first use. Raises ``MergeFieldError``."""
    used: dict[str, None] = {}
    unknown: dict[str, None] = {}
    for match in _TOKEN.finditer(template):
        token = match.group(0)
        if token in ("{{", "}}"):
            continue
        name = match.group(1)
        if name is None:
            raise MergeFieldError(
                f"Unmatched “{token}”: write {{{{ or }}}} for a literal brace, or use one of "
                + ", ".join(f"{{{n}}}" for n in MERGE_FIELDS)
                + "."
            )
        if name in MERGE_FIELDS:
            used.setdefault(name)
        else:
            unknown.setdefault(name)
    if unknown:
        names = ", ".join(f"{{{n}}}" for n in unknown)
        allowed = ", ".join(f"{{{n}}}" for n in MERGE_FIELDS)
        raise MergeFieldError(f"Unknown merge field {names}. Available: {allowed}.")
    return list(used)


def render(
    template: str, values: Mapping[str, str], *, escape: Callable[[str], str] | None = None
) -> str:
    """Replace every ``{name}`` with ``values[name]`` (passed through ``escape`` if given).

    Raises ``MergeFieldError`` for a template that ``fields_used`` would refuse.
    """
    fields_used(template)

    def substitute(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        value = str(values[match.group(1)])
        return escape(value) if escape else value

    return _TOKEN.sub(substitute, template)
