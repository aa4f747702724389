"""Staff views of webhooks: subscriptions (secrets never shown), deliveries with a "redeliver"
action, events read-only. Each list filters by account (``accounts.admin.AccountFilter``);
subscriptions also by location (one that names none receives every location's events).
Events and deliveries carry no location of their own: an event's ``data`` names it for the
receiver."""

from __future__ import annotations

from django.contrib import admin, messages

from accounts.admin import AccountFilter, LocationFilter

from .models import Event, WebhookDelivery, WebhookSubscription
from .services import webhook_deliveries_redeliver, webhook_subscription_delete


class DeliveryAccountFilter(AccountFilter):
    field = "subscription__owner"


class SubscriptionLocationFilter(LocationFilter):
    null_is_default = False  # no location: every location the subscriber reaches


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(WebhookSubscription)
class WebhookSubscriptionAdmin(ReadOnlyAdmin):
    """Owners subscribe through the API; staff look, and may delete."""

    list_display = (
        "event",
        "target_url",
        "owner",
        "location",
        "created_at",
        "failing_since",
        "disabled_at",
    )
    list_select_related = ("owner", "location")
    list_filter = (
        AccountFilter,
        SubscriptionLocationFilter,
        "event",
        ("disabled_at", admin.EmptyFieldListFilter),
    )
    search_fields = ("target_url", "owner__email")
    exclude = ("secret",)
    readonly_fields = ("owner", "event", "target_url", "created_at", "failing_since")

    # Deleted as the API's and the portal's unsubscribe deletes (its pending deliveries go too).
    def delete_model(self, request, obj) -> None:
        webhook_subscription_delete(owner=obj.owner_id, subscription_id=obj.pk)

    def delete_queryset(self, request, queryset) -> None:
        for hook in queryset:
            webhook_subscription_delete(owner=hook.owner_id, subscription_id=hook.pk)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    list_display = (
        "event_type",
        "subscription",
        "status",
        "attempts",
        "last_status_code",
        "last_error_short",
        "next_attempt_at",
        "delivered_at",
    )
    list_filter = (DeliveryAccountFilter, "status", "event__type")
    search_fields = ("subscription__target_url", "subscription__owner__email", "event__id")
    list_select_related = ("event", "subscription")
    actions = ["redeliver"]

    @admin.display(description="event", ordering="event__type")
    def event_type(self, delivery: WebhookDelivery) -> str:
        return delivery.event.type

    @admin.display(description="last error")
    def last_error_short(self, delivery: WebhookDelivery) -> str:
        return delivery.last_error[:80]

    @admin.action(description="Redeliver the selected deliveries now")
    def redeliver(self, request, queryset) -> None:
        count = webhook_deliveries_redeliver(
            delivery_ids=list(queryset.values_list("pk", flat=True))
        )
        skipped = queryset.count() - count
        self.message_user(request, f"{count} deliveries queued again.", messages.SUCCESS)
        if skipped:
            self.message_user(
                request,
                f"{skipped} skipped: their subscription is disabled.",
                messages.WARNING,
            )

    readonly_fields = (
        "event",
        "subscription",
        "status",
        "attempts",
        "next_attempt_at",
        "last_attempt_at",
        "last_status_code",
        "last_error",
        "delivered_at",
        "created_at",
    )


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("type", "owner", "occurred_at", "id")
    list_select_related = ("owner",)
    list_filter = (AccountFilter, "type")
    search_fields = ("id", "owner__email")
    readonly_fields = ("id", "owner", "type", "occurred_at", "data")
