from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm

from .models import User


class UserCreationForm(AdminUserCreationForm):
    class Meta:
        model = User
        fields = ("email", "business_name", "time_zone", "default_region")


class UserEditForm(UserChangeForm):
    class Meta:
        model = User
        fields = "__all__"


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    form = UserEditForm
    add_form = UserCreationForm
    list_display = (
        "email",
        "business_name",
        "time_zone",
        "default_region",
        "is_staff",
        "is_active",
    )
    list_filter = ("is_staff", "is_active", "default_region")
    search_fields = ("email", "business_name")
    ordering = ("email",)
    readonly_fields = ("id", "date_joined", "last_login")
    fieldsets = (
        (None, {"fields": ("id", "email", "password")}),
        ("Business", {"fields": ("business_name", "time_zone", "default_region")}),
        (
            "Permissions",
            {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")},
        ),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = (
        (
            None,
            {
                "classes": ("wide",),
                "fields": (
                    "email",
                    "business_name",
                    "time_zone",
                    "default_region",
                    "password1",
                    "password2",
                ),
            },
        ),
    )
