"""Account workflows: locations, members and their invitations, and password reset by e-mail.

Services take the account as ``account`` (its owner); callers decide who may call them with
``accounts.access`` (members, settings and locations: the owner only). Each validates with the
models' own ``full_clean()`` and raises ``ValidationError`` keyed by field, writing nothing then;
each that writes owns its transaction. E-mail goes out from a worker after commit.

The reset page hands the typed address to a worker (``tasks.send_password_reset_email``) and
answers at once, whatever the address; the worker runs ``password_reset_email_send``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Collection

from celery import current_app
from django.conf import settings
from django.contrib.auth import password_validation
from django.contrib.auth.forms import PasswordResetForm
from django.contrib.auth.tokens import default_token_generator
from django.core import signing
from django.core.exceptions import ValidationError
from django.core.mail import EmailMessage
from django.db import transaction
from django.db.models import Max, Q, RestrictedError
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from .access import locations_q
from .models import MEMBER_ROLES, Invitation, Location, User
from .signals import default_location_changing

logger = logging.getLogger(__name__)

# --- Locations ------------------------------------------------------------------------------------


def location_create(*, account: User, name: str, time_zone: str | None = None) -> Location:
    """Add a location at the end of the account's list, in ``time_zone`` (the account's when
    not given). ``ValidationError`` keyed by field: a name the account already uses, a time zone
    that is not an IANA one."""
    _require_owner(account)
    location = Location(account=account, name=name, time_zone=time_zone or account.time_zone)
    with transaction.atomic():
        _lock_locations(account)
        last = Location.objects.filter(account=account).aggregate(last=Max("position"))["last"]
        location.position = 0 if last is None else last + 1
        location.full_clean()
        location.save()
    return location


def location_default(*, account: User) -> Location:
    """The account's default location (its first), created named after the business and in
    its time zone when it has none yet: the first use of an account made without one (the
    admin's add page; ``business_create`` and the migration give every business its own)."""
    _require_owner(account)
    first = Location.objects.filter(account=account).order_by("position", "created_at").first()
    if first is not None:
        return first
    location, _ = Location.objects.get_or_create(
        account=account,
        name=Location.default_name(account),
        defaults={"time_zone": account.time_zone, "position": 0},
    )
    return location


def location_rows(*, account: User, location_id: uuid.UUID | None) -> tuple[uuid.UUID, Q]:
    """The account's location ``location_id`` (``None``: its default, created on first use)
    and the condition on rows of other apps that keeps that location's (``location`` is it, or
    NULL when it is the default). ``Location.DoesNotExist`` for another account's location."""
    order = list(
        Location.objects.filter(account=account)
        .order_by("position", "created_at")
        .values_list("pk", flat=True)
    )
    if not order:
        order = [location_default(account=account).pk]
    target = order[0] if location_id is None else location_id
    if target not in order:
        raise Location.DoesNotExist(location_id)
    return target, locations_q([target], default_location_id=order[0], field="location")


def location_update(
    *,
    account: User,
    location_id: uuid.UUID,
    name: str | None = None,
    time_zone: str | None = None,
) -> Location:
    """Rename a location or change its time zone (``None``: as it is). ``ValidationError`` keyed
    by field; ``Location.DoesNotExist`` if the account has no such location."""
    with transaction.atomic():
        location = Location.objects.select_for_update().get(account=account, pk=location_id)
        if name is not None:
            location.name = name
        if time_zone is not None:
            location.time_zone = time_zone
        location.full_clean()
        location.save(update_fields=["name", "time_zone"])
    return location


def location_move(*, account: User, location_id: uuid.UUID, position: int) -> list[Location]:
    """Put a location at ``position`` in the account's list (0: first, which makes it the
    default location; past the end: last). Returns the locations in their new order.

    Changing the default never moves old rows: rows with no location belong to the default, so
    before another location becomes it, the apps pin theirs to the old default
    (``signals.default_location_changing``). ``Location.DoesNotExist`` if the account has no
    such location."""

    def moved(order: list[uuid.UUID]) -> list[uuid.UUID]:
        if location_id not in order:
            raise Location.DoesNotExist(location_id)
        rest = [pk for pk in order if pk != location_id]
        rest.insert(min(max(position, 0), len(rest)), location_id)
        return rest

    _default_changing(account, moved)
    with transaction.atomic():
        locations = _lock_locations(account)
        order = moved([location.pk for location in locations])
        if order[0] != locations[0].pk:
            default_location_changing.send(sender=Location, account=account, location=locations[0])
        by_id = {location.pk: location for location in locations}
        ordered = [by_id[pk] for pk in order]
        for place, location in enumerate(ordered):
            if location.position != place:
                location.position = place
                location.save(update_fields=["position"])
    return ordered


def location_delete(*, account: User, location_id: uuid.UUID) -> None:
    """Delete a location with its review sites, wording and settings. ``ValidationError`` for
    the account's only location or one that has review requests (they stay where they are);
    ``Location.DoesNotExist`` if the account has no such location. Deleting the default makes
    the next location the default: its rows with no location are pinned to it first, and so
    keep it."""

    def deleted(order: list[uuid.UUID]) -> list[uuid.UUID]:
        if location_id not in order:
            raise Location.DoesNotExist(location_id)
        if len(order) == 1:
            raise ValidationError("An account keeps at least one location.")
        return [pk for pk in order if pk != location_id]

    _default_changing(account, deleted)
    with transaction.atomic():
        locations = _lock_locations(account)
        order = deleted([location.pk for location in locations])
        if order[0] != locations[0].pk:
            default_location_changing.send(sender=Location, account=account, location=locations[0])
        try:
            Location.objects.filter(pk=location_id).delete()
        except RestrictedError:
            raise ValidationError(
                "This location has review requests; it cannot be deleted."
            ) from None


def _lock_locations(account: User) -> list[Location]:
    """The account's locations in order, locked: what serialises changes to the list."""
    return list(
        Location.objects.select_for_update()
        .filter(account=account)
        .order_by("position", "created_at")
    )


def _default_changing(account: User, change: Callable[[list[uuid.UUID]], list[uuid.UUID]]) -> None:
    """Before ``change`` (the order of the account's locations, before and after) makes
    another location the default: the apps pin the old default's rows, batch by batch, outside
    the change's transaction (``change`` raises for a change that cannot be made)."""
    locations = list(Location.objects.filter(account=account).order_by("position", "created_at"))
    order = change([location.pk for location in locations])
    if order[0] != locations[0].pk:
        default_location_changing.send(sender=Location, account=account, location=locations[0])


def _require_owner(account: User) -> None:
    if account.account_id is not None:
        raise ValueError(f"{account.email} is a member, not an account")


# --- Members --------------------------------------------------------------------------------------


def member_add(
    *,
    account: User,
    email: str,
    password: str,
    role: str,
    location_ids: Collection[uuid.UUID] = (),
) -> User:
    """Create a member of the account with a password (staff's way: ``add_member``; owners
    invite). ``ValidationError`` keyed by field."""
    _require_owner(account)
    with transaction.atomic():
        return _member_create(
            account=account, email=email, password=password, role=role, location_ids=location_ids
        )


def member_update(
    *,
    account: User,
    member_id: uuid.UUID,
    role: str | None = None,
    location_ids: Collection[uuid.UUID] | None = None,
) -> User:
    """Change a member's role or locations (``None``: as they are). ``ValidationError`` keyed
    by field; ``User.DoesNotExist`` if the account has no such member."""
    with transaction.atomic():
        member = User.objects.select_for_update().get(account=account, pk=member_id)
        if role is not None:
            member.role = _member_role(role)
            member.save(update_fields=["role"])
        if location_ids is not None:
            member.locations.set(_account_locations(account, location_ids))
    return member


def member_remove(*, account: User, member_id: uuid.UUID) -> bool:
    """Remove a member: their user is deleted, so every session of theirs ends at their next
    request (it names a user that no longer exists) and their OAuth tokens go with it (and
    out of the token cache). False if the account has no such member."""
    deleted, _ = User.objects.filter(account=account, pk=member_id).delete()
    return bool(deleted)


def _member_create(
    *, account: User, email: str, password: str, role: str, location_ids: Collection[uuid.UUID]
) -> User:
    email = User.objects.normalize_email(email)
    if User.objects.with_email(email).exists():
        raise ValidationError({"email": "This address already has a login."})
    member = User(email=email, account=account, role=_member_role(role))
    try:
        password_validation.validate_password(password, user=member)
    except ValidationError as exc:
        raise ValidationError({"password": exc.messages}) from None
    locations = _account_locations(account, location_ids)
    member.set_password(password)
    member.full_clean(exclude=["password"])
    member.save()
    member.locations.set(locations)
    return member


def _member_role(role: str) -> str:
    if role not in MEMBER_ROLES:
        raise ValidationError({"role": "A member is a manager or a viewer."})
    return role


def _account_locations(account: User, location_ids: Collection[uuid.UUID]) -> list[Location]:
    wanted = set(location_ids)
    locations = list(Location.objects.filter(account=account, pk__in=wanted))
    if len(locations) != len(wanted):
        raise ValidationError({"locations": "A location that is not this account's."})
    return locations


# --- Invitations ----------------------------------------------------------------------------------

_INVITATION_SALT = "accounts.invitation"
INVITATION_TASK = "accounts.tasks.send_invitation_email"


class InvitationUnusable(Exception):
    """An invitation link that cannot be used; ``str()`` says why, for the person holding it,
    and ``code`` in a word: ``invalid`` (never ours), ``withdrawn`` (or replaced), ``used``,
    ``expired``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def member_invite(
    *,
    account: User,
    email: str,
    role: str,
    location_ids: Collection[uuid.UUID] = (),
    invited_by: User | None = None,
) -> Invitation:
    """Invite ``email`` to join the account as a manager or viewer of these locations: an
    e-mail with a link (``invitation_url``) that works once, for ``Invitation.VALID_FOR``, goes
    out through the e-mail backend from a worker after commit. Inviting an address again
    replaces its invitation (the earlier link stops working). ``ValidationError`` keyed by
    field: an address that already has a login, a role that is not a member's, a location of
    another account."""
    _require_owner(account)
    email = User.objects.normalize_email(email)
    invitation = Invitation(
        account=account, email=email, role=_member_role(role), invited_by=invited_by
    )
    invitation.full_clean(exclude=["locations"], validate_constraints=False)
    if User.objects.with_email(email).exists():
        raise ValidationError({"email": "This address already has a login."})
    with transaction.atomic():
        locations = _account_locations(account, location_ids)
        Invitation.objects.filter(account=account, email=email).delete()
        invitation.save()
        invitation.locations.set(locations)
        invitation_id = str(invitation.pk)
        transaction.on_commit(
            lambda: current_app.send_task(INVITATION_TASK, args=[invitation_id], retry=False)
        )
    return invitation


def invitation_revoke(*, account: User, invitation_id: uuid.UUID) -> bool:
    """Withdraw an invitation not yet accepted (its link stops working); False if there is
    none."""
    deleted, _ = Invitation.objects.filter(
        account=account, pk=invitation_id, accepted_at__isnull=True
    ).delete()
    return bool(deleted)


def invitation_url(invitation: Invitation) -> str:
    """The link of the invitation e-mail: ``SITE_URL/accounts/invitation/<token>/``, the token
    the invitation's id signed with ``SECRET_KEY``."""
    token = signing.Signer(salt=_INVITATION_SALT).sign(invitation.pk.hex)
    return settings.SITE_URL + reverse("invitation_accept", kwargs={"token": token})


def invitation_pending(*, token: str) -> Invitation:
    """The invitation a link's token names, if it can still be accepted; ``InvitationUnusable``
    otherwise (a link that was never ours, withdrawn or replaced, used, or expired)."""
    try:
        pk = uuid.UUID(hex=signing.Signer(salt=_INVITATION_SALT).unsign(token))
    except (signing.BadSignature, ValueError):
        raise InvitationUnusable("invalid", "This invitation link is not valid.") from None
    invitation = Invitation.objects.select_related("account").filter(pk=pk).first()
    return _usable(invitation)


def _usable(invitation: Invitation | None) -> Invitation:
    if invitation is None:
        raise InvitationUnusable(
            "withdrawn",
            "This invitation was withdrawn or replaced by a newer one: use the latest e-mail, "
            "or ask for a new invitation.",
        )
    if invitation.accepted_at is not None:
        raise InvitationUnusable("used", "This invitation was already used: log in instead.")
    if invitation.expired():
        raise InvitationUnusable(
            "expired", "This invitation has expired (a link works for 7 days): ask for a new one."
        )
    return invitation


def invitation_accept(*, token: str, password: str) -> User:
    """Accept an invitation: its address becomes a member of the account with this password,
    the role and the locations it was invited to, and the link stops working.
    ``InvitationUnusable`` for a link that cannot be used; ``ValidationError`` keyed by field
    for a password the validators refuse or an address that got a login meanwhile."""
    pk = invitation_pending(token=token).pk
    with transaction.atomic():
        invitation = _usable(Invitation.objects.select_for_update().filter(pk=pk).first())
        member = _member_create(
            account=invitation.account,
            email=invitation.email,
            password=password,
            role=invitation.role,
            location_ids=list(invitation.locations.values_list("pk", flat=True)),
        )
        invitation.accepted_at = timezone.now()
        invitation.save(update_fields=["accepted_at"])
    return member


def invitation_email_send(*, invitation_id: uuid.UUID | str) -> bool:
    """Send an invitation's e-mail (a worker, after the invitation committed). False when there
    is nothing to send any more: withdrawn, replaced, used or expired."""
    invitation = Invitation.objects.select_related("account", "invited_by").filter(pk=invitation_id)
    try:
        found = _usable(invitation.first())
    except InvitationUnusable:
        return False
    account = found.account
    context = {
        "business_name": account.display_name,
        "invited_by": found.invited_by.email if found.invited_by else account.email,
        "role": found.get_role_display().lower(),
        "locations": list(found.locations.order_by("position").values_list("name", flat=True)),
        "url": invitation_url(found),
        "valid_days": Invitation.VALID_FOR.days,
    }
    subject = render_to_string("registration/invitation_subject.txt", context).strip()
    body = render_to_string("registration/invitation_email.txt", context)
    EmailMessage(subject=" ".join(subject.split()), body=body, to=[found.email]).send()
    logger.info("invitation e-mail sent", extra={"invitation_id": str(found.pk)})
    return True


# --- Password reset -------------------------------------------------------------------------------


def password_reset_email_send(*, email: str) -> int:
    """Send a reset link to every active owner with a usable password whose address is
    ``email`` (compared case-insensitively; the mail goes to the stored address, never to what
    was typed). Returns how many were sent: 0 for an unknown address.

    The link (``SITE_URL/accounts/reset/<uid>/<token>/``) works once, for
    ``PASSWORD_RESET_TIMEOUT`` seconds, and stops working after the next login.
    """
    form = PasswordResetForm()
    sent = 0
    for user in form.get_users(email):
        context = {
            "user": user,
            "email": user.email,
            "business_name": user.business_name,
            "site_url": settings.SITE_URL,
            "uid": urlsafe_base64_encode(force_bytes(user.pk)),
            "token": default_token_generator.make_token(user),
            "valid_minutes": settings.PASSWORD_RESET_TIMEOUT // 60,
        }
        form.send_mail(
            "registration/password_reset_subject.txt",
            "registration/password_reset_email.txt",
            context,
            from_email=None,  # DEFAULT_FROM_EMAIL
            to_email=user.email,
        )
        sent += 1
    logger.info("password reset e-mail processed", extra={"sent": sent})
    return sent
