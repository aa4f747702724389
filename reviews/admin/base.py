"""What every back-office page of the reviews app shares."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.auth import get_user_model

User = get_user_model()


BACKOFFICE_CSS = "css/admin-backoffice.css"


def business_owners():
    """Owners of a business (they have review settings), by name."""
    return User.objects.filter(review_settings__isnull=False).order_by("business_name", "email")


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_staff_action_permission(self, request) -> bool:
        """Actions that go through a service need the model's change permission (the forms
        stay read-only for everyone)."""
        opts = self.opts
        return request.user.has_perm(f"{opts.app_label}.change_{opts.model_name}")


class ReadOnlyInline:
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


def report_refusals(modeladmin, request, done: int, verb: str, refused: list[str]) -> None:
    if done:
        modeladmin.message_user(request, f"{verb}: {done}.", messages.SUCCESS)
    for reason in refused[:20]:
        modeladmin.message_user(request, reason, messages.WARNING)
    if len(refused) > 20:
        modeladmin.message_user(request, f"... and {len(refused) - 20} more.", messages.WARNING)
