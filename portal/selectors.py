"""Reads behind the portal. Every function takes what the user reaches (``accounts.access``) and
reads only the account's rows at the locations they reach (``location_q``), or at the one
location chosen (``location_id``, which the caller checked they reach: ``pages.location_choice``).

* ``review_requests_list``: the dashboard list (filter by status, search by name, e-mail or
  phone), paged newest first by the view;
* ``PERIODS``: the dashboard's periods; its funnel and chart over them are the activity app's
  (``activity.owner_dashboard``);
* ``review_request_timeline`` (from ``reviews.selectors``, shared with the staff admin):
  everything that happened to one request, in order;
* ``feedback_list``, ``feedback_count``: private feedback left on the owner's requests;
  ``feedback_shared``: whether anyone besides the user reads it (the page says who does);
* ``connected_apps``: the OAuth clients the user (the owner: anybody of the account)
  authorised that still hold live tokens.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db.models import Prefetch, Q, QuerySet
from oauth2_provider.models import get_refresh_token_model

from accounts.access import Access, can_manage_account, location_q, locations_q
from accounts.models import User
from activity.owner_dashboard import period_start
from events.models import WebhookDelivery, WebhookSubscription
from oauth_provider.models import Connection
from reviews import selectors as reviews_selectors
from reviews.models import (
    BusinessSettings,
    Channel,
    Feedback,
    Message,
    ReviewRequest,
)

# Shared with the staff admin; re-exported for the portal's views.
from reviews.selectors import review_request_timeline as review_request_timeline

# --- The dashboard list ---------------------------------------------------------------------------

SEARCH_MAX_LENGTH = reviews_selectors.SEARCH_MAX_LENGTH


def at_locations(
    access: Access, location_id: uuid.UUID | None = None, field: str = "location"
) -> Q:
    """Rows (``field``: the path to their location) at the location ``location_id``, one the
    caller checked ``access`` reaches; without one, at every location ``access`` reaches (no
    condition for the owner). Combine it with the account's own condition."""
    if location_id is None:
        return location_q(access, field)
    return locations_q([location_id], default_location_id=access.default_location_id, field=field)


def review_requests_list(
    *, access: Access, location_id: uuid.UUID | None = None, status: str = "", search: str = ""
) -> QuerySet[ReviewRequest]:
    """The account's review requests at the locations ``access`` reaches (or at
    ``location_id``) with their contact and messages loaded (page it newest first
    with ``core.pagination.keyset_page``).

    ``status`` keeps one status; ``search`` finds an e-mail address or phone number (typed any
    way; read with the owner's ``default_region``), or names, company and e-mail containing
    every word (``reviews.selectors.contact_search``). Each is served by an index: the owner's
    ``(owner, [status,] created_at, id)`` keys, the contact's btree keys on the e-mail and the
    phone for a whole address, its trigram index for the rest.
    """
    owner = access.owner
    requests = ReviewRequest.objects.filter(at_locations(access, location_id), owner=owner)
    if status:
        requests = requests.filter(status=status)
    if search.strip():
        # The contact's owner too (always the request's): a whole e-mail or phone number is then
        # an equality on a btree key (the owner's unique one, or the address's own), never a
        # lookup in the trigram index, whose cost grows with the table.
        requests = requests.filter(
            reviews_selectors.contact_search(
                search=search, region=owner.default_region, prefix="contact__"
            ),
            contact__owner=owner,
        )
    return requests.select_related("contact").prefetch_related(
        Prefetch(
            "messages",
            queryset=Message.objects.only("id", "review_request_id", "step", "channel"),
        )
    )


def channels_of(review_request: ReviewRequest) -> list[str]:
    """The channels of a request's messages in step order, each once ("SMS", "e-mail")."""
    seen: dict[str, None] = {}
    for message in sorted(review_request.messages.all(), key=lambda m: m.step):
        seen.setdefault(Channel(message.channel).label)
    return list(seen)


# --- The dashboard's periods (its funnel, chart and feedback count) -------------------------------

PERIODS: dict[str, tuple[str, int | None]] = {
    "7": ("Last 7 days", 7),
    "30": ("Last 30 days", 30),
    "90": ("Last 90 days", 90),
    "all": ("All time", None),
}
DEFAULT_PERIOD = "30"


# --- Private feedback -----------------------------------------------------------------------------


def feedback_list(*, access: Access, location_id: uuid.UUID | None = None) -> QuerySet[Feedback]:
    """The private feedback left on the account's requests at the locations ``access``
    reaches (or at ``location_id``), with each request's contact (page it newest first with
    ``core.pagination.keyset_page``)."""
    return Feedback.objects.filter(
        at_locations(access, location_id, "review_request__location"),
        review_request__owner=access.owner,
    ).select_related("review_request__contact")


def feedback_count(
    *, access: Access, days: int | None, location_id: uuid.UUID | None = None
) -> int:
    """Private feedback received in the last ``days`` days (``period_start``; all time: None),
    at the locations of ``feedback_list``."""
    feedback = Feedback.objects.filter(
        at_locations(access, location_id, "review_request__location"),
        review_request__owner=access.owner,
    )
    if days:
        feedback = feedback.filter(created_at__gte=period_start(days=days))
    return feedback.count()


def feedback_shared(*, access: Access) -> bool:
    """Whether someone besides the user reads the feedback ``access`` reaches: for a member,
    always (the owner reaches every location); for the owner, whether the account has members
    (each reads the feedback of the locations they reach: ``accounts.access``). One query for
    the owner, none for a member."""
    if not can_manage_account(access):
        return True
    return User.objects.filter(account=access.owner).exists()


# --- Connected apps -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConnectedApp:
    """One app one person of the account connected, with every live connection of theirs to
    it: connecting again (a second Zap account, a reconnect) makes another connection, and they
    are one app to them."""

    connections: list[Connection]  # newest first, each with its ``user`` loaded
    scopes: list[tuple[str, str]] = field(default_factory=list)  # (scope, plain description)

    @property
    def name(self) -> str:
        return self.connections[0].application.name

    @property
    def user(self) -> User:
        """Who connected it."""
        return self.connections[0].user

    @property
    def connection(self) -> Connection:
        """The newest connection."""
        return self.connections[0]

    @property
    def count(self) -> int:
        return len(self.connections)

    @property
    def connected_since(self) -> datetime:
        return min(c.created_at for c in self.connections)

    @property
    def last_used_at(self) -> datetime | None:
        return max((c.last_used_at for c in self.connections if c.last_used_at), default=None)


def connections_visible(access: Access) -> Q:
    """The app connections ``access`` sees and may disconnect: the owner, everybody's in the
    account; a member, their own."""
    if can_manage_account(access):
        return Q(user=access.owner) | Q(user__account=access.owner)
    return Q(user=access.user)


def connected_apps(*, access: Access) -> list[ConnectedApp]:
    """The apps connected by the people ``connections_visible`` shows, one entry per app and
    person (the newest connection first), each with its connections that still hold a live
    (not revoked) refresh token and the scopes of their live access tokens."""
    connections = list(
        Connection.objects.with_active()
        .filter(connections_visible(access), active=True)
        .select_related("application", "user")
        .order_by("-created_at")
    )
    live = (
        get_refresh_token_model()
        .objects.filter(
            token_family__in=[c.pk for c in connections],
            revoked__isnull=True,
            access_token__isnull=False,
        )
        .values_list("token_family", "access_token__scope")
    )
    scopes: dict[object, set[str]] = {}
    for family, scope in live:
        scopes.setdefault(family, set()).update(scope.split())
    described = settings.OAUTH2_PROVIDER["SCOPES"]
    order = list(described)
    by_app: dict[tuple[object, object], list[Connection]] = {}
    for connection in connections:
        by_app.setdefault((connection.application_id, connection.user_id), []).append(connection)
    apps = []
    for group in by_app.values():
        granted = set().union(*(scopes.get(c.pk, set()) for c in group))
        ordered = sorted(granted, key=lambda s: (order.index(s) if s in order else len(order), s))
        apps.append(
            ConnectedApp(
                connections=group, scopes=[(name, described.get(name, name)) for name in ordered]
            )
        )
    return apps


def first_message_hours(*, review_request: ReviewRequest, messages: list[Message]) -> str:
    """For a request whose first message has not gone yet: the sending hours it waits for and
    whose clock they follow (why its time may have moved); ``""`` when none apply."""
    first = next((m for m in messages if m.step == 0), None)
    if first is None or review_request.status != ReviewRequest.Status.SCHEDULED:
        return ""
    policy = BusinessSettings.for_owner(review_request.owner).at(review_request.location_id)
    send = policy.send_time(
        channel=first.channel,
        requested=review_request.scheduled_for,
        phone=review_request.contact.phone,
    )
    return send.hours_text(first.get_channel_display())


# --- Webhooks ------------------------------------------------------------------------------------

RECENT_DELIVERIES = 50


def webhook_subscriptions(*, owner: User) -> list[WebhookSubscription]:
    """The owner's REST hooks, newest first (``is_active``, ``disabled_reason``)."""
    return list(WebhookSubscription.objects.filter(owner=owner).order_by("-created_at"))


def webhook_deliveries_recent(*, owner: User) -> list[WebhookDelivery]:
    """The owner's latest deliveries (status, attempts, last error), newest first."""
    return list(
        WebhookDelivery.objects.filter(subscription__owner=owner)
        .select_related("event", "subscription")
        .order_by("-created_at")[:RECENT_DELIVERIES]
    )
