"""What every portal page shares: login, who reaches what, the location chosen, no caching, a
strict CSP, the account's clock.

Portal pages show personal data (contacts, their phone numbers and e-mail addresses, private
feedback), so they are never stored by a browser or proxy (``Cache-Control: no-store``), load
nothing from other origins, and show every time in the account's own time zone.

The owner and the account's members (managers, viewers) use the same pages; each page reads
through ``request.access`` (``accounts.access``): what it lists is limited to the locations the
user reaches, a row of another location is a 404, a viewer's writes are a 403, and the pages
that change the account itself (``owner_page(account=True)``) are the owner's only.

The location chosen on the dashboard, the request list, feedback and settings is a GET parameter
(``?location=<uuid>``, ``LocationChoice``), kept in those pages' links and forms: a settings form
posts to the location it showed, whatever another tab chose meanwhile.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import overload
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import SimpleTemplateResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache

from accounts.access import Access, access_for, can_manage_account, can_write, reaches
from accounts.models import User
from reviews.models import BusinessSettings, LocationPolicy

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
    """The request a ``owner_page`` view receives: a logged-in user's (the account's owner or
    one of its members), so ``user`` is a ``User``, with what they reach (``access``). For
    annotations only: the object is Django's ``HttpRequest``."""

    user: User
    access: Access


View = Callable[..., HttpResponse]


@overload
def owner_page(
    view: View, *, csp: str = ..., account: bool = ..., viewer_posts: bool = ...
) -> View: ...
@overload
def owner_page(
    view: None = None, *, csp: str = ..., account: bool = ..., viewer_posts: bool = ...
) -> Callable[[View], View]: ...
def owner_page(
    view: View | None = None,
    *,
    csp: str = PORTAL_CSP,
    account: bool = False,
    viewer_posts: bool = False,
) -> View | Callable[[View], View]:
    """Decorate a portal view: logged-in users only (others go to the login page), with what
    they reach as ``request.access``, rendered in the account's time zone,
    ``Cache-Control: no-store``, the portal's CSP.

    ``account=True``: a page of the account itself (its settings, members, locations, apps,
    webhooks), the owner's only: a 403 for members. A viewer's POST is a 403 on every page
    (they read only), unless ``viewer_posts`` (a page where a viewer changes only what is their
    own, such as their own app connections).

    ``@owner_page`` or ``@owner_page(csp=..., account=...)``; the view takes an
    ``OwnerRequest``, the decorated view any request."""

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapped(request: OwnerRequest, *args: object, **kwargs: object) -> HttpResponse:
            request.access = access = _access(request.user)
            if account and not can_manage_account(access):
                raise PermissionDenied("the account owner's page")
            if request.method == "POST" and not viewer_posts:
                require_write(request)
            with timezone.override(access.owner.tzinfo):
                response = view(request, *args, **kwargs)
                if isinstance(response, SimpleTemplateResponse) and not response.is_rendered:
                    response.render()  # inside the account's time zone
            response["Content-Security-Policy"] = csp
            return response

        return login_required(never_cache(wrapped))

    return decorate(view) if view is not None else decorate


def _access(user: User) -> Access:
    """``accounts.access.access_for(user)``; an owner's locations read from the cache of the
    account's settings (``BusinessSettings.for_owner``, which the pages read anyway), so an
    owner's page costs no query more than before members existed."""
    if user.is_member:
        return access_for(user)
    locations = BusinessSettings.for_owner(user).locations
    return access_for(user, owner_location_ids=[location.id for location in locations])


def require_write(request: OwnerRequest) -> None:
    """A 403 for a user who may not change what they reach (a viewer): for the pages that
    only write, their GET (a confirmation) too."""
    if not can_write(request.access):
        raise PermissionDenied("read only")


# --- The location chosen ------------------------------------------------------------------------


@dataclass(frozen=True)
class LocationChoice:
    """The locations a user reaches (``options``, in the account's order) and the one chosen
    (``chosen``; ``None``: "All locations", or the account's own settings on the settings
    pages). ``shown``: whether the page shows the switcher (the user reaches several
    locations); ``query``: what keeps the choice in a link (``?location=<uuid>`` or ``""``)."""

    options: list[LocationPolicy]
    chosen: LocationPolicy | None
    all_allowed: bool

    @property
    def shown(self) -> bool:
        return len(self.options) > 1

    @property
    def chosen_id(self) -> uuid.UUID | None:
        return self.chosen.id if self.chosen is not None else None

    @property
    def query(self) -> str:
        return f"?{urlencode({'location': self.chosen.id})}" if self.chosen else ""

    @property
    def name(self) -> str:
        """What the choice is called on a page: the location's name, or "All locations"."""
        return self.chosen.name if self.chosen is not None else "All locations"


def location_choice(request: OwnerRequest, *, all_allowed: bool = True) -> LocationChoice:
    """The location ``?location=`` chooses among those ``request.access`` reaches: a 404 for
    one it does not reach (or that is not a location id). Without one: "All locations" when
    ``all_allowed``, else the user's first location (a member on a page that edits one
    location: they never edit the account's own settings). A user who reaches one location
    has it chosen whenever ``all_allowed`` is false, and never sees a switcher."""
    access = request.access
    # The account's locations as cached with its settings (no query), those ``access`` reaches.
    options = [
        location
        for location in BusinessSettings.for_owner(access.owner).locations
        if reaches(access, location.id)
    ]
    raw = request.GET.get("location", "")
    chosen: LocationPolicy | None = None
    if raw:
        try:
            wanted = uuid.UUID(raw)
        except ValueError:
            raise Http404("No such location.") from None
        chosen = next((location for location in options if location.id == wanted), None)
        if chosen is None:
            raise Http404("No such location.")
    elif not all_allowed and options:
        chosen = options[0]
    return LocationChoice(options=options, chosen=chosen, all_allowed=all_allowed)
