from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.http import HttpRequest

from .models import IdempotencyKey

# ModelAdmin is generic in the stubs only: it cannot be subscripted at run time.
if TYPE_CHECKING:
    ModelAdmin = admin.ModelAdmin[IdempotencyKey]
else:
    ModelAdmin = admin.ModelAdmin


@admin.register(IdempotencyKey)
class IdempotencyKeyAdmin(ModelAdmin):
    """Read-only: what a retried request would get back, for support questions."""

    list_display = ("key", "owner", "endpoint", "state", "response_status", "created_at")
    list_filter = ("state", "endpoint")
    search_fields = ("key", "owner__email")

    def has_add_permission(self, request: HttpRequest, obj: IdempotencyKey | None = None) -> bool:
        return False

    def has_change_permission(
        self, request: HttpRequest, obj: IdempotencyKey | None = None
    ) -> bool:
        return False
