"""The one rule for an id in an API path.

An id in the path is looked up among the token owner's own rows only: a malformed id, an id
that does not exist and another owner's id are the same 404, so that no owner learns what
exists outside their own.
"""

from __future__ import annotations

from typing import TypeVar

from django.db.models import Model, QuerySet
from rest_framework.exceptions import NotFound

from accounts.models import User
from contact_input.normalize import is_uuid

M = TypeVar("M", bound=Model)


def owned_or_404(queryset: QuerySet[M], *, owner: User, pk: str, not_found: str) -> M:
    """The row ``pk`` of ``queryset`` that belongs to ``owner``; any other id is a 404 with
    ``not_found`` as its description (an id that is not a UUID included: the lookup would fail
    rather than find nothing)."""
    found = queryset.filter(owner=owner, pk=pk).first() if is_uuid(pk) else None
    if found is None:
        raise NotFound(not_found)
    return found
