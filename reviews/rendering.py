"""The words of each message: the location's own template for the step, else the account's,
else the shipped default; sender name and postal address the location's where it sets them
(``BusinessSettings.at``), else the account's.

Defaults are files in ``templates/messages/`` (``sms/initial.txt``, ``email/initial_subject.txt``,
``email/initial.txt``, ``email/initial.html``; ``follow_up_<n>.*`` for one follow-up, else
``follow_up.*``). Templates, default or the owner's, go through ``reviews.merge_fields`` only:
no template engine ever sees owner-written text. Values are HTML-escaped in HTML parts. The
e-mail layout around the body (footer, postal address, unsubscribe link) is ours and is a
Django template fed only escaped values.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from email.utils import formataddr, parseaddr
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import F, Q
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from . import merge_fields
from .models import BusinessSettings, Channel, Message, MessageTemplate, ReviewRequest
from .sms_segments import SegmentCount, count_segments

DEFAULTS_DIR = Path(settings.BASE_DIR) / "templates" / "messages"


@dataclass(frozen=True)
class RenderedEmail:
    subject: str
    text: str
    html: str
    from_email: str
    reply_to: tuple[str, ...]
    headers: dict[str, str]


def merge_values(review_request: ReviewRequest, policy: BusinessSettings) -> dict[str, str]:
    """The values of the merge fields for one request, with the documented fallbacks."""
    contact = review_request.contact
    owner = review_request.owner
    return {
        "first_name": contact.first_name or "there",
        "contact_name": contact.full_name or "there",
        "business_name": business_name(owner, policy),
        "review_link": review_request.public_url(),
        "company_name": contact.company_name or "your company",
    }


def business_name(owner, policy: BusinessSettings) -> str:
    return (owner.business_name or policy.sender_name or "our team").strip()


def _template_kind(step: int) -> tuple[str, ...]:
    return ("initial",) if step == 0 else (f"follow_up_{step}", "follow_up")


@lru_cache(maxsize=64)
def default_file(channel: str, step: int, part: str) -> str:
    """The shipped default of ``part`` ("" for the body, "_subject", ".html") for a step."""
    folder = DEFAULTS_DIR / ("sms" if channel == Channel.SMS else "email")
    for kind in _template_kind(step):
        name = f"{kind}{part}" if part.startswith(".") else f"{kind}{part}.txt"
        path = folder / name
        if path.is_file():
            return path.read_text(encoding="utf-8").strip()
    raise FileNotFoundError(f"no default {channel} template for step {step} ({part or 'body'})")


def owner_template(owner, channel: str, step: int, location_id=None) -> MessageTemplate | None:
    """The owner's (a ``User`` or its primary key) wording of this channel and step at the
    location ``location_id``: the location's own, else the account's; ``location_id`` None:
    the account's. One query."""
    templates = MessageTemplate.objects.filter(owner=owner, channel=channel, step=step)
    if location_id is None:
        return templates.filter(location__isnull=True).first()
    own_first = F("location").asc(nulls_last=True)
    return (
        templates.filter(Q(location_id=location_id) | Q(location__isnull=True))
        .order_by(own_first)
        .first()
    )


# ``template`` of ``render_sms``/``render_email`` not given: look the owner's up.
LOOK_UP: Any = object()


def render_sms(
    message: Message, policy: BusinessSettings, *, template: MessageTemplate | None = LOOK_UP
) -> str:
    """The SMS for ``message``, by the policy at its request's location. ``template``: the
    owner's for this step, channel and location, or ``None`` for the default, when the caller
    already read it (the send's claim does)."""
    request = message.review_request
    policy = policy.at(request.location_id)
    if template is LOOK_UP:
        template = owner_template(request.owner, Channel.SMS, message.step, policy.location_id)
    return sms_text(step=message.step, values=merge_values(request, policy), template=template)


def render_email(
    message: Message, policy: BusinessSettings, *, template: MessageTemplate | None = LOOK_UP
) -> RenderedEmail:
    """The e-mail for ``message``; policy and ``template`` as for ``render_sms``."""
    request = message.review_request
    policy = policy.at(request.location_id)
    if template is LOOK_UP:
        template = owner_template(request.owner, Channel.EMAIL, message.step, policy.location_id)
    return email_parts(
        owner=request.owner,
        policy=policy,
        step=message.step,
        values=merge_values(request, policy),
        template=template,
        unsubscribe_url=request.unsubscribe_url(),
        headers=unsubscribe_headers(request),
    )


def sms_text(*, step: int, values: dict[str, str], template: MessageTemplate | None) -> str:
    """The SMS for ``step``: ``template`` (the owner's) or the shipped default, merged."""
    body = template.body if template else default_file(Channel.SMS, step, "")
    return merge_fields.render(body, values).strip()


def email_parts(
    *,
    owner,
    policy: BusinessSettings,
    step: int,
    values: dict[str, str],
    template: MessageTemplate | None,
    unsubscribe_url: str,
    headers: dict[str, str],
) -> RenderedEmail:
    """The e-mail for ``step``: subject, text and HTML inside our layout (footer, address)."""
    if template:
        subject = merge_fields.render(template.subject, values)
        text = merge_fields.render(template.body, values)
        body_html = text_to_html(text, link=values["review_link"])
    else:
        subject = merge_fields.render(default_file(Channel.EMAIL, step, "_subject"), values)
        text = merge_fields.render(default_file(Channel.EMAIL, step, ""), values)
        body_html = merge_fields.render(
            default_file(Channel.EMAIL, step, ".html"), values, escape=html.escape
        )
    subject = " ".join(subject.split())  # one header line, whatever the values held
    context = {
        "subject": subject,
        "body_text": text,
        "body_html": mark_safe(body_html),  # our markup, every value escaped above
        "business_name": values["business_name"],
        "postal_address": policy.postal_address.strip(),
        "unsubscribe_url": unsubscribe_url,
    }
    return RenderedEmail(
        subject=subject,
        text=render_to_string("messages/email/layout.txt", context).strip() + "\n",
        html=render_to_string("messages/email/layout.html", context),
        from_email=from_address(owner, policy),
        reply_to=(owner.email,) if owner.email else (),
        headers=headers,
    )


# --- Previews (admin and portal template editors) ---------------------------------------------


SAMPLE_TOKEN = "Xq3v9KpT2mWb7LcN4rYd8A"  # as long as a real token (22 characters)


@dataclass(frozen=True)
class Preview:
    """A message as a sample contact would receive it: SMS text and segments, or an e-mail."""

    channel: str
    sms: str = ""
    segments: SegmentCount | None = None
    email: RenderedEmail | None = None


def sample_values(owner, policy: BusinessSettings) -> dict[str, str]:
    """Merge values of an imaginary contact, so previews show real lengths and wording."""
    return {
        "first_name": "Jane",
        "contact_name": "Jane Smith",
        "business_name": business_name(owner, policy),
        "review_link": f"{settings.SITE_URL}/r/{SAMPLE_TOKEN}/",
        "company_name": "Smith & Co",
    }


def preview_message(
    *,
    owner,
    channel: str,
    step: int,
    template: MessageTemplate | None = None,
    location_id=None,
) -> Preview:
    """Render ``step`` on ``channel`` for a sample contact, with the account's settings
    (``location_id``: a location's, and its own wording where it has some).

    ``template`` is a draft (saved or not; run its ``clean()`` first); without one, the owner's
    saved template or the shipped default is shown, as a real send would use.
    """
    policy = BusinessSettings.for_owner(owner)
    if location_id is not None:
        policy = policy.at(location_id)
    values = sample_values(owner, policy)
    template = template or owner_template(owner, channel, step, location_id)
    if channel == Channel.SMS:
        text = sms_text(step=step, values=values, template=template)
        return Preview(channel=channel, sms=text, segments=count_segments(text))
    unsubscribe_url = f"{settings.SITE_URL}/unsubscribe/{SAMPLE_TOKEN}/"
    email = email_parts(
        owner=owner,
        policy=policy,
        step=step,
        values=values,
        template=template,
        unsubscribe_url=unsubscribe_url,
        headers={"List-Unsubscribe": f"<{unsubscribe_url}>"},
    )
    return Preview(channel=channel, email=email)


def from_address(owner, policy: BusinessSettings) -> str:
    """``"Sender name" <DEFAULT_FROM_EMAIL's address>``: the business's name, our domain."""
    _, address = parseaddr(settings.DEFAULT_FROM_EMAIL)
    name = " ".join((policy.sender_name or business_name(owner, policy)).split())[:100]
    return formataddr((name, address or settings.DEFAULT_FROM_EMAIL))


def unsubscribe_headers(review_request: ReviewRequest) -> dict[str, str]:
    """RFC 2369 ``List-Unsubscribe`` with RFC 8058 one-click (Gmail and Yahoo require it)."""
    targets = [f"<{review_request.unsubscribe_url()}>"]
    if settings.UNSUBSCRIBE_MAILTO:
        targets.append(
            f"<mailto:{settings.UNSUBSCRIBE_MAILTO}?subject=unsubscribe%20{review_request.token}>"
        )
    return {
        "List-Unsubscribe": ", ".join(targets),
        "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
    }


def text_to_html(text: str, *, link: str) -> str:
    """An owner's plain-text e-mail as simple HTML: escaped, paragraphs, the link clickable."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    escaped_link = html.escape(link)
    anchor = f'<a href="{escaped_link}" style="color:#1f6feb">{escaped_link}</a>'
    out = []
    for paragraph in paragraphs:
        body = html.escape(paragraph).replace(escaped_link, anchor).replace("\n", "<br>\n")
        out.append(f'<p style="margin:0 0 16px">{body}</p>')
    return "\n".join(out)
