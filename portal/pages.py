"""What every owner page shares: login, no caching, a strict CSP, the owner's clock.

Portal pages show personal data (contacts, their phone numbers and e-mail addresses, private
feedback), so they are never stored by a browser or proxy (``Cache-Control: no-store``), load
nothing from other origins, and show every time in the owner's own time zone.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import overload

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import SimpleTemplateResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache

from accounts.models import User

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


class OwnerRequest(HttpRequest):
    """The request an ``owner_page`` view receives: a logged-in owner's, so ``user`` is a
    ``User``. For annotations only: the object is Django's ``HttpRequest``."""

    user: User


View = Callable[..., HttpResponse]


@overload
def owner_page(view: View, *, csp: str = ...) -> View: ...
@overload
def owner_page(view: None = None, *, csp: str = ...) -> Callable[[View], View]: ...
def owner_page(view: View | None = None, *, csp: str = PORTAL_CSP) -> View | Callable[[View], View]:
    """Decorate a portal view: logged-in owners only (others go to the login page; a team
    member gets a 403 until the pages read through ``accounts.access``), rendered in the
    owner's time zone, ``Cache-Control: no-store``, the portal's CSP.

    ``@owner_page`` or ``@owner_page(csp=...)``; the view takes an ``OwnerRequest``, the
    decorated view any request."""

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapped(request: OwnerRequest, *args: object, **kwargs: object) -> HttpResponse:
            if request.user.is_member:  # these pages read and write as the account itself
                raise PermissionDenied("the owner's pages")
            with timezone.override(request.user.tzinfo):
                response = view(request, *args, **kwargs)
                if isinstance(response, SimpleTemplateResponse) and not response.is_rendered:
                    response.render()  # inside the owner's time zone
            response["Content-Security-Policy"] = csp
            return response

        return login_required(never_cache(wrapped))

    return decorate(view) if view is not None else decorate
