"""The Team page (the owner's only): the account's members with their role and locations,
inviting someone by e-mail, changing a member's role and locations, removing a member (their
sessions and app tokens end at once), and the invitations not yet accepted, which the owner may
withdraw. Every change goes through ``accounts.services``."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Prefetch
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from accounts import services as account_services
from accounts.models import Invitation, Location, User

from ..forms import InvitationForm, MemberForm
from ..pages import OwnerRequest, owner_page


def _locations() -> Prefetch:
    return Prefetch("locations", queryset=Location.objects.order_by("position", "created_at"))


@owner_page(account=True)
@require_http_methods(["GET", "HEAD", "POST"])
def index(request: OwnerRequest) -> HttpResponse:
    """The members, the pending invitations and a form to invite someone."""
    owner = request.access.owner
    form = InvitationForm(request.POST or None, account=owner)
    if request.method == "POST" and form.is_valid():
        try:
            invitation = account_services.member_invite(
                account=owner,
                email=form.cleaned_data["email"],
                role=form.cleaned_data["role"],
                location_ids=form.location_ids(),
                invited_by=request.user,
            )
        except ValidationError as exc:
            form.add_service_error(exc)
        else:
            messages.success(
                request,
                f"Invitation sent to {invitation.email}: the link in it works for "
                f"{Invitation.VALID_FOR.days} days.",
            )
            return redirect("portal:team")
    members = User.objects.filter(account=owner).prefetch_related(_locations()).order_by("email")
    invitations = (
        Invitation.objects.filter(account=owner, accepted_at__isnull=True)
        .prefetch_related(_locations())
        .order_by("-created_at")
    )
    return render(
        request,
        "portal/team.html",
        {
            "section": "settings",
            "tab": "team",
            "form": form,
            "members": list(members),
            "invitations": list(invitations),
        },
    )


def _member(request: OwnerRequest, pk: uuid.UUID) -> User:
    """A member of the account, or 404 (the owner themselves, another account's user)."""
    return get_object_or_404(User, pk=pk, account=request.access.owner)


@owner_page(account=True)
@require_http_methods(["GET", "HEAD", "POST"])
def member(request: OwnerRequest, pk: uuid.UUID) -> HttpResponse:
    """Change a member's role and locations."""
    owner = request.access.owner
    found = _member(request, pk)
    if request.method == "POST":
        form = MemberForm(request.POST, account=owner)
        if form.is_valid():
            try:
                account_services.member_update(
                    account=owner,
                    member_id=found.pk,
                    role=form.cleaned_data["role"],
                    location_ids=form.location_ids(),
                )
            except ValidationError as exc:
                form.add_service_error(exc)
            else:
                messages.success(request, f"Saved: {found.email} has their new role and locations.")
                return redirect("portal:team")
    else:
        form = MemberForm(
            initial={"role": found.role, "locations": list(found.locations.all())}, account=owner
        )
    return render(
        request,
        "portal/team_member.html",
        {"section": "settings", "tab": "team", "form": form, "member": found},
    )


@owner_page(account=True)
@require_http_methods(["GET", "HEAD", "POST"])
def member_remove(request: OwnerRequest, pk: uuid.UUID) -> HttpResponse:
    """GET asks for confirmation; POST removes the member: their login, their sessions and
    their apps' tokens end at once (``accounts.services.member_remove``)."""
    found = _member(request, pk)
    if request.method == "POST":
        if account_services.member_remove(account=request.access.owner, member_id=found.pk):
            messages.success(
                request, f"Removed {found.email}: they are logged out and their apps stopped."
            )
        return redirect("portal:team")
    return render(
        request,
        "portal/team_member_remove.html",
        {"section": "settings", "tab": "team", "member": found},
    )


@owner_page(account=True)
@require_POST
def invitation_revoke(request: OwnerRequest, pk: uuid.UUID) -> HttpResponse:
    """Withdraw an invitation not yet accepted: its link stops working."""
    invitation = Invitation.objects.filter(
        account=request.access.owner, pk=pk, accepted_at__isnull=True
    ).first()
    if invitation is None or not account_services.invitation_revoke(
        account=request.access.owner, invitation_id=pk
    ):
        raise Http404("No such invitation.")
    messages.success(request, f"Withdrew the invitation of {invitation.email}.")
    return redirect("portal:team")
