"""Settings: the business and its sending policy, review sites, the wording of each message.

With a location chosen (``?location=``), each page edits that location: what it sends
differently from the account (sender name, postal address, sending window; the owner's), its
review sites and its own wording (falling back to the account's, then ours). Without one, the
account's own: its settings, the default location's review sites, the account's wording. A
member never edits the account's own (their first location is chosen for them) and never its
business settings (403).
"""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from accounts.access import can_manage_account, can_write
from reviews import merge_fields, services
from reviews.models import (
    MAX_FOLLOW_UPS,
    BusinessSettings,
    Channel,
    LocationSettings,
    MessageTemplate,
    ReviewSite,
)
from reviews.rendering import default_file, preview_message

from .. import selectors
from ..forms import BusinessSettingsForm, LocationSettingsForm, MessageTemplateForm, ReviewSiteForm
from ..pages import (
    PREVIEW_CSP,
    LocationChoice,
    OwnerRequest,
    location_choice,
    owner_page,
    require_write,
)
from ..templatetags.portal import after_first


def _render(
    request: OwnerRequest, template: str, tab: str, context: dict[str, object]
) -> HttpResponse:
    """A settings page: the forms are shown to those who may write (not to a viewer)."""
    return render(
        request,
        template,
        {"section": "settings", "tab": tab, "can_write": can_write(request.access), **context},
    )


def _choice(request: OwnerRequest) -> LocationChoice:
    """The location these pages edit: the one chosen; none (the account's own) for the owner
    only. A member given no location yet has nothing to edit here (403)."""
    owner = can_manage_account(request.access)
    choice = location_choice(request, all_allowed=owner)
    if choice.chosen is None and not owner:
        raise PermissionDenied("no location")
    return choice


def _back(name: str, choice: LocationChoice, **kwargs: object) -> HttpResponse:
    """Redirect to a settings page, keeping the location chosen."""
    return redirect(reverse(name, kwargs=kwargs or None) + choice.query)


# --- Business and sending policy ------------------------------------------------------------------


@owner_page(account=True)
@require_http_methods(["GET", "HEAD", "POST"])
def business(request: OwnerRequest) -> HttpResponse:
    choice = location_choice(request)
    if choice.chosen is not None:
        return _location_settings(request, choice)
    owner = request.access.owner
    if request.method == "POST":
        form = BusinessSettingsForm(request.POST, current_time_zone=owner.time_zone)
        if form.is_valid():
            try:
                services.business_settings_update(owner=owner, changes=form.cleaned_data)
            except ValidationError as exc:
                form.add_service_error(exc)
            else:
                messages.success(
                    request, "Settings saved. They apply to requests added from now on."
                )
                return redirect("portal:settings")
    else:
        policy = BusinessSettings.for_owner(owner)
        form = BusinessSettingsForm(
            initial=BusinessSettingsForm.initial_for(owner, policy),
            current_time_zone=owner.time_zone,
        )
    return _render(
        request, "portal/settings_business.html", "settings", {"form": form, "switcher": choice}
    )


def _location_settings(request: OwnerRequest, choice: LocationChoice) -> HttpResponse:
    """One location's sender name, postal address and sending window (blank: the
    account's)."""
    owner = request.access.owner
    location = choice.chosen
    assert location is not None
    account = BusinessSettings.for_owner(owner)
    if request.method == "POST":
        form = LocationSettingsForm(request.POST, account=account)
        if form.is_valid():
            try:
                services.location_settings_update(
                    owner=owner, location_id=location.id, changes=form.cleaned_data
                )
            except ValidationError as exc:
                form.add_service_error(exc)
            else:
                messages.success(
                    request,
                    f"Settings of {location.name} saved. They apply to its requests added "
                    "from now on.",
                )
                return _back("portal:settings", choice)
    else:
        own = LocationSettings.objects.filter(location_id=location.id).first()
        form = LocationSettingsForm(initial=LocationSettingsForm.initial_for(own), account=account)
    return _render(
        request,
        "portal/settings_location.html",
        "settings",
        {"form": form, "switcher": choice, "location": location, "account": account},
    )


# --- Review sites ---------------------------------------------------------------------------------


def _sites(request: OwnerRequest, choice: LocationChoice) -> list[ReviewSite]:
    """The review sites of the location chosen (none: the default location's)."""
    access = request.access
    location_id = choice.chosen_id or access.default_location_id
    rows = selectors.at_locations(access, location_id) if location_id else Q()
    return list(
        ReviewSite.objects.filter(rows, owner=access.owner).order_by("position", "created_at")
    )


@owner_page
@require_http_methods(["GET", "HEAD", "POST"])
def sites(request: OwnerRequest) -> HttpResponse:
    """A location's review sites in the order its contacts see them, and a form to add one."""
    owner = request.access.owner
    choice = _choice(request)
    listed = _sites(request, choice)
    form = ReviewSiteForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        url, label = form.cleaned_data["url"], form.cleaned_data["label"]
        if any(site.url == url for site in listed):
            form.add_error("url", "This link is already on your list.")
        else:
            try:
                site = services.review_site_add(  # goes last
                    owner=owner, url=url, label=label, location_id=choice.chosen_id
                )
            except ValidationError as exc:
                form.add_service_error(exc)
            else:
                messages.success(request, f"Added {site.label}.")
                return _back("portal:sites", choice)
    return _render(
        request,
        "portal/settings_sites.html",
        "sites",
        {
            "form": form,
            "sites": listed,
            "switcher": choice,
            "default_location": choice.options[0] if choice.options else None,
        },
    )


def _reached_site(request: OwnerRequest, pk: uuid.UUID) -> ReviewSite:
    """A review site at a location the user reaches, or 404."""
    site = (
        ReviewSite.objects.filter(
            selectors.at_locations(request.access), owner=request.access.owner
        )
        .filter(pk=pk)
        .first()
    )
    if site is None:
        raise Http404("No such review site.")
    return site


@owner_page
@require_POST
def site_move(request: OwnerRequest, pk: uuid.UUID) -> HttpResponse:
    choice = _choice(request)
    offset = {"up": -1, "down": 1}.get(request.POST.get("direction", ""))
    if offset is None:
        return _back("portal:sites", choice)
    _reached_site(request, pk)
    if not services.review_site_move(owner=request.access.owner, site_id=pk, offset=offset):
        raise Http404("No such review site.")
    return redirect(reverse("portal:sites") + choice.query + f"#site-{pk}")


@owner_page
@require_POST
def site_remove(request: OwnerRequest, pk: uuid.UUID) -> HttpResponse:
    choice = _choice(request)
    site = _reached_site(request, pk)
    if not services.review_site_remove(owner=request.access.owner, site_id=pk):
        raise Http404("No such review site.")
    messages.success(request, f"Removed {site.label}. Contacts no longer see it.")
    return _back("portal:sites", choice)


# --- Message wording ------------------------------------------------------------------------------


def _step_label(step: int, offsets: list[int]) -> tuple[str, str]:
    """("Follow-up 2", "7 days after the first message") for a step of the owner's plan."""
    if step == 0:
        return "First message", "when the contact is added (after any wait and quiet hours)"
    name = f"Follow-up {step}"
    if step > len(offsets):
        return name, "not in your current follow-up plan"
    return name, f"{after_first(offsets[step - 1])} after the first message"


def _templates(request: OwnerRequest, location_id: uuid.UUID | None) -> dict:
    """The saved wording of the account (``location_id`` None) or of one location, by
    ``(channel, step)``."""
    own = MessageTemplate.objects.filter(owner=request.access.owner)
    if location_id is None:
        own = own.filter(location__isnull=True)  # the account's
    else:
        own = own.filter(location_id=location_id)
    return {(t.channel, t.step): t for t in own}


@owner_page
@require_http_methods(["GET", "HEAD"])
def message_list(request: OwnerRequest) -> HttpResponse:
    """Every step of the account's plan, per channel: the wording in use (a location's own,
    the account's, or ours)."""
    owner = request.access.owner
    choice = _choice(request)
    offsets = BusinessSettings.for_owner(owner).follow_up_offsets_hours
    saved = _templates(request, choice.chosen_id)
    account = _templates(request, None) if choice.chosen is not None else {}
    last_step = max([len(offsets), *(step for _, step in saved), *(step for _, step in account)])
    rows = []
    for step in range(last_step + 1):
        name, when = _step_label(step, offsets)
        rows.append(
            {
                "step": step,
                "name": name,
                "when": when,
                "channels": [
                    (channel, channel.label, saved.get((channel.value, step)))
                    for channel in (Channel.SMS, Channel.EMAIL)
                ],
                # With a location chosen: the channels whose step has the account's wording.
                "account_wording": [
                    channel for channel in Channel.values if (channel, step) in account
                ],
            }
        )
    return _render(
        request,
        "portal/settings_messages.html",
        "messages",
        {"rows": rows, "switcher": choice},
    )


def _editable(channel: str, step: int) -> None:
    if channel not in Channel.values or not 0 <= step <= MAX_FOLLOW_UPS:
        raise Http404("No such message.")


def _fallback_wording(channel: str, step: int, account: MessageTemplate | None) -> dict[str, str]:
    """What a step says without wording of its own: the account's (for a location), else
    ours."""
    if account is not None:
        return {"body": account.body, "subject": account.subject}
    wording = {"body": default_file(channel, step, "")}
    if channel == Channel.EMAIL:
        wording["subject"] = default_file(channel, step, "_subject")
    return wording


@owner_page(csp=PREVIEW_CSP)
@require_http_methods(["GET", "HEAD", "POST"])
def message_edit(request: OwnerRequest, channel: str, step: int) -> HttpResponse:
    """Edit one message; "Preview" renders the draft for a sample contact through the real send
    path (with the SMS segment count) without saving, "Save" stores it."""
    _editable(channel, step)
    owner = request.access.owner
    choice = _choice(request)
    location_id = choice.chosen_id
    saved = _templates(request, location_id).get((channel, step))
    account = _templates(request, None).get((channel, step)) if location_id else None
    default = _fallback_wording(channel, step, account)
    preview = None
    if request.method == "POST":
        form = MessageTemplateForm(request.POST, channel=channel)
        if form.is_valid():
            wording = {
                "subject": form.cleaned_data.get("subject", ""),
                "body": form.cleaned_data["body"],
            }
            try:
                draft = services.message_template_draft(
                    owner=owner, channel=channel, step=step, location_id=location_id, **wording
                )
                if request.POST.get("action") == "save":
                    return _save(request, choice, draft, saved=saved, default=default)
                preview = preview_message(
                    owner=owner,
                    channel=channel,
                    step=step,
                    template=draft,
                    location_id=location_id,
                )
            except ValidationError as exc:
                form.add_service_error(exc)
    else:
        initial = {"subject": saved.subject, "body": saved.body} if saved else default
        form = MessageTemplateForm(initial=initial, channel=channel)
        preview = preview_message(owner=owner, channel=channel, step=step, location_id=location_id)
    name, when = _step_label(step, BusinessSettings.for_owner(owner).follow_up_offsets_hours)
    return _render(
        request,
        "portal/settings_message_edit.html",
        "messages",
        {
            "form": form,
            "channel": Channel(channel),
            "step": step,
            "step_name": name,
            "step_when": when,
            "saved": saved,
            "account_wording": account,
            "preview": preview,
            "merge_fields": merge_fields.MERGE_FIELDS,
            "switcher": choice,
        },
    )


def _save(
    request: OwnerRequest,
    choice: LocationChoice,
    draft: MessageTemplate,
    *,
    saved: MessageTemplate | None,
    default: dict[str, str],
) -> HttpResponse:
    same_as_default = draft.body == default["body"] and draft.subject == default.get("subject", "")
    if saved is None and same_as_default:
        messages.info(request, "This is the default wording already; nothing to save.")
    else:
        services.message_template_save(
            owner=request.access.owner,
            channel=draft.channel,
            step=draft.step,
            subject=draft.subject,
            body=draft.body,
            location_id=choice.chosen_id,
        )
        messages.success(request, "Saved. Messages not sent yet will use this wording.")
    return _back("portal:message-edit", choice, channel=draft.channel, step=draft.step)


@owner_page
@require_POST
def message_reset(request: OwnerRequest, channel: str, step: int) -> HttpResponse:
    _editable(channel, step)
    require_write(request)
    choice = _choice(request)
    if services.message_template_reset(
        owner=request.access.owner, channel=channel, step=step, location_id=choice.chosen_id
    ):
        messages.success(
            request,
            "Back to the account's wording."
            if choice.chosen is not None
            else "Back to the default wording.",
        )
    return _back("portal:message-edit", choice, channel=channel, step=step)
