from django.contrib import admin

from .models import IdempotencyKey


@admin.register(IdempotencyKey)
class IdempotencyKeyAdmin(admin.ModelAdmin):
    """Read-only: what a retried request would get back, for support questions."""

    list_display = ("key", "owner", "endpoint", "state", "response_status", "created_at")
    list_filter = ("state", "endpoint")
    search_fields = ("key", "owner__email")

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False
