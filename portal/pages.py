"""What every owner page shares: login, no caching, a strict CSP, the owner's clock.

Portal pages show personal data (contacts, their phone numbers and e-mail addresses, private
feedback), so they are never stored by a browser or proxy (``Cache-Control: no-store``), load
nothing from other origins, and show every time in the owner's own time zone.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache

# Scripts and styles from this origin only (one stylesheet, one small script, no inline code);
# forms post here only; nothing may frame a portal page.
PORTAL_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
# The e-mail preview is the real message HTML (inline style attributes, as e-mail clients need)
# in a sandboxed ``srcdoc`` frame, which inherits the page's policy: style attributes are let
# through on that page, and still no script, no inline <style>, nothing from elsewhere.
PREVIEW_CSP = PORTAL_CSP.replace(
    "style-src 'self';", "style-src 'self'; style-src-attr 'unsafe-inline';"
)


def owner_page(
    view: Callable[..., HttpResponse] | None = None, *, csp: str = PORTAL_CSP
) -> Callable[..., HttpResponse]:
    """Decorate a portal view: logged-in owners only (others go to the login page), rendered
    in the owner's time zone, ``Cache-Control: no-store``, the portal's CSP."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            with timezone.override(request.user.tzinfo):
                response = view(request, *args, **kwargs)
                if hasattr(response, "render") and not response.is_rendered:
                    response.render()  # inside the owner's time zone
            response["Content-Security-Policy"] = csp
            return response

        return login_required(never_cache(wrapped))

    return decorate(view) if view is not None else decorate
