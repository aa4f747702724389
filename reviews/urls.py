"""Public URLs of the reviews app, mounted at the site root (``config/urls.py``)."""

from __future__ import annotations

from functools import wraps

from anymail import urls as anymail_urls
from django.conf import settings
from django.http import HttpResponseForbidden
from django.urls import URLPattern, include, path

from . import views

app_name = "reviews"


def _require_webhook_secret(view):
    """anymail accepts unauthenticated webhooks (with a warning) when ``WEBHOOK_SECRET`` is
    unset; for ESPs whose only protection is that basic auth, refuse instead: a forged
    "complained" or "bounced" event would opt people out."""
    view_class = getattr(view, "view_class", None)
    if not getattr(view_class, "warn_if_no_basic_auth", False):
        return view  # the ESP signs its webhooks and anymail checks the signature

    @wraps(view)
    def guarded(request, *args, **kwargs):
        if not settings.ANYMAIL.get("WEBHOOK_SECRET"):
            return HttpResponseForbidden("Set ANYMAIL WEBHOOK_SECRET to accept ESP webhooks.")
        return view(request, *args, **kwargs)

    return guarded


_anymail_patterns = [
    URLPattern(
        pattern.pattern,
        _require_webhook_secret(pattern.callback),
        pattern.default_args,
        pattern.name,
    )
    for pattern in anymail_urls.urlpatterns
]

urlpatterns = [
    path("r/<str:token>/", views.review_page, name="landing"),
    path("r/<str:token>/go/<uuid:site_id>/", views.review_site_redirect, name="go"),
    path("r/<str:token>/feedback/", views.feedback, name="feedback"),
    path("unsubscribe/<str:token>/", views.unsubscribe, name="unsubscribe"),
    path("webhooks/twilio/status/<uuid:message_id>/", views.twilio_status, name="twilio_status"),
    path("webhooks/twilio/inbound/", views.twilio_inbound, name="twilio_inbound"),
    path("webhooks/anymail/", include((_anymail_patterns, "anymail"), namespace="anymail")),
]
