"""Staff admin for OAuth: clients, connections and tokens, with nothing secret on any page.

django-oauth-toolkit's own registrations are replaced. Client secrets are generated here and
shown exactly once, on the page that follows creation (or a rotation); afterwards only their
hash exists. Token values, checksums and authorization codes are never listed, shown or
searchable. Revoking anything ends the whole connection it belongs to (``services``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django import forms
from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.translation import ngettext
from oauth2_provider.generators import generate_client_secret
from oauth2_provider.models import (
    AbstractAccessToken,
    AbstractApplication,
    AbstractRefreshToken,
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_id_token_model,
    get_refresh_token_model,
)

from . import services
from .models import Connection, ConnectionQuerySet

if TYPE_CHECKING:
    from .models import ConnectionWithActive

    # django-stubs makes ModelForm and ModelAdmin generic in their model; Django's own classes
    # cannot be subscripted at run time.
    _ApplicationForm = forms.ModelForm[AbstractApplication]
    _ApplicationAdmin = admin.ModelAdmin[AbstractApplication]
    _ModelAdmin = admin.ModelAdmin[Model]
else:
    _ApplicationForm = forms.ModelForm
    _ApplicationAdmin = _ModelAdmin = admin.ModelAdmin

Application = get_application_model()
AccessToken = get_access_token_model()
RefreshToken = get_refresh_token_model()

for _model in (Application, AccessToken, RefreshToken, get_grant_model(), get_id_token_model()):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)


class ApplicationForm(_ApplicationForm):
    class Meta:
        model = Application
        fields = ("name", "client_type", "redirect_uris", "user")
        help_texts = {
            "redirect_uris": "Exact https URIs, one per line, e.g. the one `zapier-platform "
            "describe` prints. Requests must repeat one of them character for character.",
            "user": "Optional: the staff member who owns this client.",
        }
        widgets = {"redirect_uris": forms.Textarea(attrs={"rows": 3, "cols": 80})}


def _show_secrets(
    request: HttpRequest, rows: list[tuple[AbstractApplication, str]], *, title: str
) -> TemplateResponse:
    """The one page a client secret is ever shown on; never cached."""
    response = TemplateResponse(
        request,
        "admin/oauth_provider/client_secret.html",
        {**admin.site.each_context(request), "title": title, "rows": rows},
    )
    response["Cache-Control"] = "no-store"
    return response


@admin.register(Application)
class ApplicationAdmin(_ApplicationAdmin):
    form = ApplicationForm
    list_display = ("name", "client_id", "client_type", "redirect_uris", "created")
    search_fields = ("name", "client_id")
    raw_id_fields = ("user",)
    actions = ("rotate_secret",)

    def get_readonly_fields(
        self, request: HttpRequest, obj: AbstractApplication | None = None
    ) -> tuple[str, ...]:
        if obj is None:
            return ()
        return ("client_id", "client_secret_state", "authorization_grant_type", "created")

    def get_fields(
        self, request: HttpRequest, obj: AbstractApplication | None = None
    ) -> tuple[str, ...]:
        fields = ["name", "client_type", "redirect_uris", "user"]
        if obj is not None:
            fields[1:1] = ["client_id", "client_secret_state", "authorization_grant_type"]
            fields.append("created")
        return tuple(fields)

    @admin.display(description="client secret")
    def client_secret_state(self, obj: AbstractApplication) -> str:
        return "hashed: it was shown once, when the client was created or rotated"

    def save_model(
        self, request: HttpRequest, obj: AbstractApplication, form: ApplicationForm, change: bool
    ) -> None:
        if not change:
            secret = generate_client_secret()
            obj.client_secret = secret
            obj.hash_client_secret = True
            obj.authorization_grant_type = Application.GRANT_AUTHORIZATION_CODE
            obj.skip_authorization = False
            request._oauth_new_secret = secret  # type: ignore[attr-defined]  # read once by response_add
        super().save_model(request, obj, form, change)

    def response_add(
        self, request: HttpRequest, obj: AbstractApplication, post_url_continue: str | None = None
    ) -> HttpResponse:
        secret = getattr(request, "_oauth_new_secret", None)
        if secret is None:
            return super().response_add(request, obj, post_url_continue)
        return _show_secrets(request, [(obj, secret)], title="OAuth client created")

    @admin.action(
        description="Rotate client secret (the old one stops working)", permissions=["change"]
    )
    def rotate_secret(
        self, request: HttpRequest, queryset: QuerySet[AbstractApplication]
    ) -> HttpResponse:
        rows = []
        for application in queryset:
            secret = generate_client_secret()
            application.client_secret = secret
            application.hash_client_secret = True
            application.save(update_fields=["client_secret", "hash_client_secret", "updated"])
            rows.append((application, secret))
        return _show_secrets(request, rows, title="Client secrets rotated")


class ReadOnlyAdmin(_ModelAdmin):
    """Tokens come from OAuth flows only; staff look and revoke, never edit or delete rows."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        opts = self.opts
        return request.user.has_perm(f"{opts.app_label}.change_{opts.model_name}")


def _revoked_message(count: int) -> str:
    return ngettext("Revoked %d token.", "Revoked %d tokens.", count) % count


@admin.register(Connection)
class ConnectionAdmin(ReadOnlyAdmin):
    list_display = ("user", "application", "created_at", "last_used_at", "is_active")
    list_filter = ("application",)
    list_select_related = ("user", "application")
    search_fields = ("user__email", "user__business_name", "application__name")
    date_hierarchy = "created_at"
    actions = ("revoke",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[ConnectionWithActive]:
        queryset = super().get_queryset(request)
        # Connection's default manager makes them; django-stubs only knows the base class here.
        assert isinstance(queryset, ConnectionQuerySet)
        return queryset.with_active()

    @admin.display(boolean=True, description="active", ordering="active")
    def is_active(self, obj: ConnectionWithActive) -> bool:
        return obj.active

    @admin.action(description="Revoke selected connections (disconnect)", permissions=["revoke"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[Connection]) -> None:
        count = sum(services.connection_revoke(connection_id=c.pk) for c in queryset)
        self.message_user(request, _revoked_message(count))


@admin.register(AccessToken)
class AccessTokenAdmin(ReadOnlyAdmin):
    list_display = ("pk", "user", "application", "scope", "created", "expires")
    list_filter = ("application",)
    list_select_related = ("user", "application")
    search_fields = ("user__email", "user__business_name", "application__name")
    fields = ("user", "application", "scope", "created", "expires", "source_refresh_token")
    actions = ("revoke",)

    @admin.action(
        description="Revoke the connections of the selected tokens", permissions=["revoke"]
    )
    def revoke(self, request: HttpRequest, queryset: QuerySet[AbstractAccessToken]) -> None:
        count = sum(services.token_connection_revoke(access_token=t) for t in queryset)
        self.message_user(request, _revoked_message(count))


@admin.register(RefreshToken)
class RefreshTokenAdmin(ReadOnlyAdmin):
    list_display = ("pk", "user", "application", "token_family", "created", "revoked")
    list_filter = ("application", ("revoked", admin.EmptyFieldListFilter))
    list_select_related = ("user", "application")
    search_fields = ("user__email", "user__business_name", "application__name")
    fields = ("user", "application", "token_family", "access_token", "created", "revoked")
    actions = ("revoke",)

    @admin.action(
        description="Revoke the connections of the selected tokens", permissions=["revoke"]
    )
    def revoke(self, request: HttpRequest, queryset: QuerySet[AbstractRefreshToken]) -> None:
        count = sum(services.token_connection_revoke(refresh_token=t) for t in queryset)
        self.message_user(request, _revoked_message(count))
