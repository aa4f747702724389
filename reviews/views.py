"""Public pages and provider webhooks of the reviews app. Views parse, call one service, render.

* ``/r/<token>/``: the review page: every review site of the request's location, equal
  prominence, and private feedback as an extra option (never instead of the sites: no gating).
* ``/r/<token>/go/<site id>/``: records the click (filtering bots) and redirects to the site.
* ``/unsubscribe/<token>/``: e-mail opt-out page, and RFC 8058 one-click POST target.
* ``/webhooks/twilio/status/<message id>/`` and ``/webhooks/twilio/inbound/``: Twilio's status
  callbacks and incoming SMS, verified with Twilio's signature (403 without a valid one).
* ``/webhooks/anymail/...``: anymail's tracking/inbound webhooks (``reviews/urls.py``).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_http_methods, require_POST
from twilio.request_validator import RequestValidator
from twilio.twiml.messaging_response import MessagingResponse

from . import services
from .models import BusinessSettings, Feedback, ReviewRequest, ReviewSite
from .rendering import business_name
from .sms_keywords import sms_reply_text

logger = logging.getLogger(__name__)


def _request_or_none(token: str) -> ReviewRequest | None:
    if not token or len(token) > 64:
        return None
    return ReviewRequest.objects.select_related("owner", "contact").filter(token=token).first()


def _not_found(request: HttpRequest) -> HttpResponse:
    return render(request, "reviews/not_found.html", status=404)


def _location_sites(review_request: ReviewRequest) -> tuple[BusinessSettings, QuerySet]:
    """The business's policy at the request's location, and that location's review sites."""
    policy = BusinessSettings.for_owner(review_request.owner).at(review_request.location_id)
    return policy, ReviewSite.of_location(review_request.owner_id, policy.location)


def _page_context(review_request: ReviewRequest) -> dict:
    policy, sites = _location_sites(review_request)
    return {
        "review_request": review_request,
        "business_name": business_name(review_request.owner, policy),
        "sites": list(sites),
        "max_feedback": Feedback.MAX_LENGTH,
    }


@never_cache
@require_http_methods(["GET", "HEAD"])
def review_page(request: HttpRequest, token: str) -> HttpResponse:
    review_request = _request_or_none(token)
    if review_request is None:
        return _not_found(request)
    context = _page_context(review_request)
    context["thanks"] = request.GET.get("feedback") == "sent"
    return render(request, "reviews/landing.html", context)


@never_cache
@require_http_methods(["GET", "HEAD"])
def review_site_redirect(request: HttpRequest, token: str, site_id) -> HttpResponse:
    review_request = _request_or_none(token)
    if review_request is None:
        return _not_found(request)
    site = _location_sites(review_request)[1].filter(pk=site_id).first()
    if site is None:
        return _not_found(request)
    outcome = services.click_record(
        review_request=review_request,
        site=site,
        method=request.method or "",  # always set on a request Django handles
        user_agent=request.headers.get("User-Agent", ""),
        ip=request.META.get("REMOTE_ADDR", ""),
    )
    return HttpResponseRedirect(outcome.url)


@require_POST
def feedback(request: HttpRequest, token: str) -> HttpResponse:
    review_request = _request_or_none(token)
    if review_request is None:
        return _not_found(request)
    try:
        services.feedback_leave(
            review_request=review_request,
            text=request.POST.get("text", ""),
            ip=request.META.get("REMOTE_ADDR", ""),
        )
    except ValidationError as exc:
        context = _page_context(review_request)
        context["feedback_error"] = " ".join(exc.messages)
        context["feedback_text"] = request.POST.get("text", "")[: Feedback.MAX_LENGTH]
        return render(request, "reviews/landing.html", context, status=400)
    return HttpResponseRedirect(
        reverse("reviews:landing", kwargs={"token": token}) + "?feedback=sent#feedback"
    )


def _is_one_click(request: HttpRequest) -> bool:
    """RFC 8058: a POST whose only field is ``List-Unsubscribe=One-Click``."""
    return (
        request.method == "POST"
        and list(request.POST.keys()) == ["List-Unsubscribe"]
        and request.POST.get("List-Unsubscribe") == "One-Click"
    )


@never_cache
@csrf_exempt  # only the exact RFC 8058 one-click form; every other POST is CSRF-checked below
@require_http_methods(["GET", "HEAD", "POST"])
def unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    if _is_one_click(request):
        # Mail providers post this without cookies or a CSRF token, by design (RFC 8058).
        contact = services.contact_email_unsubscribe(
            token=token, raw_text="List-Unsubscribe one-click"
        )
        if contact is None:
            return HttpResponse("Unknown unsubscribe link.", status=404, content_type="text/plain")
        return HttpResponse("Unsubscribed.", content_type="text/plain")
    return csrf_protect(_unsubscribe_page)(request, token)


def _unsubscribe_page(request: HttpRequest, token: str) -> HttpResponse:
    review_request = _request_or_none(token)
    if review_request is None:
        return _not_found(request)
    context = _page_context(review_request)
    context["email"] = review_request.contact.email
    if request.method == "POST":
        services.contact_email_unsubscribe(token=token, raw_text="unsubscribe page")
        return render(request, "reviews/unsubscribed.html", context)
    context["already"] = review_request.contact.email_opted_out_at is not None
    return render(request, "reviews/unsubscribe.html", context)


# --- Twilio webhooks ------------------------------------------------------------------------------


def _twilio_signature_valid(request: HttpRequest) -> bool:
    """Twilio signs the public URL it called plus the POST fields with our auth token. Behind a
    proxy the URL we see is not the public one, so it is rebuilt from ``SITE_URL``."""
    signature = request.headers.get("X-Twilio-Signature", "")
    if not settings.TWILIO_AUTH_TOKEN or not signature:
        return False
    url = settings.SITE_URL + request.get_full_path()
    return RequestValidator(settings.TWILIO_AUTH_TOKEN).validate(url, request.POST, signature)


@csrf_exempt
@require_POST
def twilio_status(request: HttpRequest, message_id) -> HttpResponse:
    if not _twilio_signature_valid(request):
        logger.warning("twilio status callback with a bad or missing signature")
        return HttpResponseForbidden("Invalid signature.")
    result = services.twilio_status_record(
        message_id=str(message_id),
        sid=request.POST.get("MessageSid", "") or request.POST.get("SmsSid", ""),
        status=request.POST.get("MessageStatus", "") or request.POST.get("SmsStatus", ""),
        error_code=request.POST.get("ErrorCode", ""),
    )
    logger.info("twilio status callback", extra={"message_id": str(message_id), "result": result})
    return HttpResponse(status=200)  # also for unknown ids, so Twilio stops retrying


@csrf_exempt
@require_POST
def twilio_inbound(request: HttpRequest) -> HttpResponse:
    if not _twilio_signature_valid(request):
        logger.warning("twilio inbound webhook with a bad or missing signature")
        return HttpResponseForbidden("Invalid signature.")
    body = request.POST.get("Body", "")
    intent = services.sms_reply_record(
        from_number=request.POST.get("From", ""),
        body=body,
        message_sid=request.POST.get("MessageSid", "") or request.POST.get("SmsSid", ""),
    )
    reply = MessagingResponse()
    text = sms_reply_text(
        body,
        intent,
        help_text=settings.SMS_HELP_TEXT,
        twilio_answers_standard=settings.TWILIO_ANSWERS_STANDARD_KEYWORDS,
    )
    if text:
        reply.message(text)
    return HttpResponse(str(reply), content_type="text/xml")
