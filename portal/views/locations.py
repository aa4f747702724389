"""The Locations page (the owner's only): the account's locations in order (the first is the
default: a request that names none goes there), adding one, renaming it or changing its time
zone, moving it up or down or making it the default, and deleting one. Every change goes
through ``accounts.services``, and what they refuse is said on the page."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from accounts import services as account_services
from accounts.models import Location

from ..forms import LocationForm
from ..pages import OwnerRequest, owner_page


def _ordered(request: OwnerRequest) -> list[Location]:
    return list(
        Location.objects.filter(account=request.access.owner).order_by("position", "created_at")
    )


def _refused(exc: ValidationError) -> str:
    return " ".join(exc.messages)


@owner_page(account=True)
@require_http_methods(["GET", "HEAD", "POST"])
def index(request: OwnerRequest) -> HttpResponse:
    """The locations, and a form to add one (in the account's time zone unless chosen)."""
    owner = request.access.owner
    form = LocationForm(
        request.POST or None,
        initial={"time_zone": owner.time_zone},
        current_time_zone=owner.time_zone,
    )
    if request.method == "POST" and form.is_valid():
        try:
            location = account_services.location_create(
                account=owner,
                name=form.cleaned_data["name"],
                time_zone=form.cleaned_data["time_zone"],
            )
        except ValidationError as exc:
            form.add_service_error(exc)
        else:
            messages.success(
                request,
                f"Added {location.name}. Give it its review sites: Settings, Review sites, "
                f"with {location.name} chosen.",
            )
            return redirect("portal:locations")
    return render(
        request,
        "portal/locations.html",
        {"section": "settings", "tab": "locations", "form": form, "locations": _ordered(request)},
    )


def _location(request: OwnerRequest, pk: uuid.UUID) -> Location:
    return get_object_or_404(Location, pk=pk, account=request.access.owner)


@owner_page(account=True)
@require_http_methods(["GET", "HEAD", "POST"])
def edit(request: OwnerRequest, pk: uuid.UUID) -> HttpResponse:
    """Rename a location or change its time zone."""
    location = _location(request, pk)
    form = LocationForm(
        request.POST or None,
        initial={"name": location.name, "time_zone": location.time_zone},
        current_time_zone=location.time_zone,
    )
    if request.method == "POST" and form.is_valid():
        try:
            account_services.location_update(
                account=request.access.owner,
                location_id=location.pk,
                name=form.cleaned_data["name"],
                time_zone=form.cleaned_data["time_zone"],
            )
        except ValidationError as exc:
            form.add_service_error(exc)
        else:
            messages.success(request, f"Saved {form.cleaned_data['name']}.")
            return redirect("portal:locations")
    return render(
        request,
        "portal/location_edit.html",
        {"section": "settings", "tab": "locations", "form": form, "location": location},
    )


@owner_page(account=True)
@require_POST
def move(request: OwnerRequest, pk: uuid.UUID) -> HttpResponse:
    """Move a location one place up or down, or to the top ("default": it becomes the default
    location)."""
    order = [location.pk for location in _ordered(request)]
    if pk not in order:
        raise Http404("No such location.")
    here = order.index(pk)
    position = {"up": here - 1, "down": here + 1, "default": 0}.get(
        request.POST.get("direction", "")
    )
    if position is None:
        return redirect("portal:locations")
    try:
        ordered = account_services.location_move(
            account=request.access.owner, location_id=pk, position=position
        )
    except Location.DoesNotExist:
        raise Http404("No such location.") from None
    except ValidationError as exc:
        messages.error(request, _refused(exc))
    else:
        if position == 0:
            messages.success(
                request,
                f"{ordered[0].name} is the default location now: requests that name no "
                "location go there.",
            )
    return redirect("portal:locations")


@owner_page(account=True)
@require_http_methods(["GET", "HEAD", "POST"])
def delete(request: OwnerRequest, pk: uuid.UUID) -> HttpResponse:
    """GET asks for confirmation; POST deletes the location with its review sites, wording
    and settings, unless the services refuse (the only location, one with review requests)."""
    location = _location(request, pk)
    if request.method == "POST":
        try:
            account_services.location_delete(account=request.access.owner, location_id=pk)
        except Location.DoesNotExist:
            raise Http404("No such location.") from None
        except ValidationError as exc:
            messages.error(request, f"{location.name} was not deleted. {_refused(exc)}")
        else:
            messages.success(request, f"Deleted {location.name}.")
        return redirect("portal:locations")
    return render(
        request,
        "portal/location_delete.html",
        {"section": "settings", "tab": "locations", "location": location},
    )
