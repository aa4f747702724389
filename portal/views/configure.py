"""Settings: the business and its sending policy, review sites, the wording of each message."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from accounts.models import User
from reviews import merge_fields, services
from reviews.models import MAX_FOLLOW_UPS, BusinessSettings, Channel, MessageTemplate, ReviewSite
from reviews.rendering import default_file, preview_message

from ..forms import BusinessSettingsForm, MessageTemplateForm, ReviewSiteForm
from ..pages import PREVIEW_CSP, OwnerRequest, owner_page
from ..templatetags.portal import after_first


def _render(
    request: HttpRequest, template: str, tab: str, context: dict[str, object]
) -> HttpResponse:
    return render(request, template, {"section": "settings", "tab": tab, **context})


# --- Business and sending policy ------------------------------------------------------------------


@owner_page
@require_http_methods(["GET", "HEAD", "POST"])
def business(request: OwnerRequest) -> HttpResponse:
    owner = request.user
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
    return _render(request, "portal/settings_business.html", "settings", {"form": form})


# --- Review sites ---------------------------------------------------------------------------------


def _sites(owner: User) -> list[ReviewSite]:
    return list(ReviewSite.objects.filter(owner=owner).order_by("position", "created_at"))


@owner_page
@require_http_methods(["GET", "HEAD", "POST"])
def sites(request: OwnerRequest) -> HttpResponse:
    """The owner's review sites in the order contacts see them, and a form to add one."""
    owner = request.user
    form = ReviewSiteForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        url, label = form.cleaned_data["url"], form.cleaned_data["label"]
        if ReviewSite.objects.filter(owner=owner, url=url).exists():
            form.add_error("url", "This link is already on your list.")
        else:
            try:
                site = services.review_site_add(owner=owner, url=url, label=label)  # goes last
            except ValidationError as exc:
                form.add_service_error(exc)
            else:
                messages.success(request, f"Added {site.label}.")
                return redirect("portal:sites")
    return _render(
        request, "portal/settings_sites.html", "sites", {"form": form, "sites": _sites(owner)}
    )


@owner_page
@require_POST
def site_move(request: OwnerRequest, pk: uuid.UUID) -> HttpResponse:
    offset = {"up": -1, "down": 1}.get(request.POST.get("direction", ""))
    if offset is None:
        return redirect("portal:sites")
    if not services.review_site_move(owner=request.user, site_id=pk, offset=offset):
        raise Http404("No such review site.")
    return redirect(reverse("portal:sites") + f"#site-{pk}")


@owner_page
@require_POST
def site_remove(request: OwnerRequest, pk: uuid.UUID) -> HttpResponse:
    site = ReviewSite.objects.filter(owner=request.user, pk=pk).first()
    if site is None or not services.review_site_remove(owner=request.user, site_id=pk):
        raise Http404("No such review site.")
    messages.success(request, f"Removed {site.label}. Contacts no longer see it.")
    return redirect("portal:sites")


# --- Message wording ------------------------------------------------------------------------------


def _step_label(step: int, offsets: list[int]) -> tuple[str, str]:
    """("Follow-up 2", "7 days after the first message") for a step of the owner's plan."""
    if step == 0:
        return "First message", "when the contact is added (after any wait and quiet hours)"
    name = f"Follow-up {step}"
    if step > len(offsets):
        return name, "not in your current follow-up plan"
    return name, f"{after_first(offsets[step - 1])} after the first message"


@owner_page
@require_http_methods(["GET", "HEAD"])
def message_list(request: OwnerRequest) -> HttpResponse:
    """Every step of the owner's plan, per channel: their own wording or the default."""
    owner = request.user
    offsets = BusinessSettings.for_owner(owner).follow_up_offsets_hours
    own = MessageTemplate.objects.filter(owner=owner, location__isnull=True)  # the account's
    saved = {(t.channel, t.step): t for t in own}
    last_step = max([len(offsets), *(step for _, step in saved)])
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
            }
        )
    return _render(request, "portal/settings_messages.html", "messages", {"rows": rows})


def _editable(channel: str, step: int) -> None:
    if channel not in Channel.values or not 0 <= step <= MAX_FOLLOW_UPS:
        raise Http404("No such message.")


def _default_wording(channel: str, step: int) -> dict[str, str]:
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
    owner = request.user
    saved = MessageTemplate.objects.filter(
        owner=owner, location__isnull=True, channel=channel, step=step
    ).first()
    default = _default_wording(channel, step)
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
                    owner=owner, channel=channel, step=step, **wording
                )
                if request.POST.get("action") == "save":
                    return _save(request, draft, saved=saved, default=default)
                preview = preview_message(owner=owner, channel=channel, step=step, template=draft)
            except ValidationError as exc:
                form.add_service_error(exc)
    else:
        initial = {"subject": saved.subject, "body": saved.body} if saved else default
        form = MessageTemplateForm(initial=initial, channel=channel)
        preview = preview_message(owner=owner, channel=channel, step=step)
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
            "preview": preview,
            "merge_fields": merge_fields.MERGE_FIELDS,
        },
    )


def _save(
    request: OwnerRequest,
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
            owner=request.user,
            channel=draft.channel,
            step=draft.step,
            subject=draft.subject,
            body=draft.body,
        )
        messages.success(request, "Saved. Messages not sent yet will use this wording.")
    return redirect("portal:message-edit", channel=draft.channel, step=draft.step)


@owner_page
@require_POST
def message_reset(request: OwnerRequest, channel: str, step: int) -> HttpResponse:
    _editable(channel, step)
    if services.message_template_reset(owner=request.user, channel=channel, step=step):
        messages.success(request, "Back to the default wording.")
    return redirect("portal:message-edit", channel=channel, step=step)
