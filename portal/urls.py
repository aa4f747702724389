"""The portal under /portal/ (the dashboard itself is the front page, ``/``)."""

from django.urls import path

from .views import apps, configure, feedback, locations, requests, team, webhooks

app_name = "portal"

urlpatterns = [
    path("requests/<uuid:pk>/", requests.detail, name="request"),
    path("requests/<uuid:pk>/cancel/", requests.cancel, name="request-cancel"),
    path("feedback/", feedback.index, name="feedback"),
    path("settings/", configure.business, name="settings"),
    path("settings/sites/", configure.sites, name="sites"),
    path("settings/sites/<uuid:pk>/move/", configure.site_move, name="site-move"),
    path("settings/sites/<uuid:pk>/remove/", configure.site_remove, name="site-remove"),
    path("settings/messages/", configure.message_list, name="messages"),
    path(
        "settings/messages/<str:channel>/<int:step>/",
        configure.message_edit,
        name="message-edit",
    ),
    path(
        "settings/messages/<str:channel>/<int:step>/reset/",
        configure.message_reset,
        name="message-reset",
    ),
    path("apps/", apps.index, name="apps"),
    path("apps/<uuid:pk>/disconnect/", apps.disconnect, name="app-disconnect"),
    path("webhooks/", webhooks.index, name="webhooks"),
    path("webhooks/<uuid:pk>/remove/", webhooks.remove, name="webhook-remove"),
    path("team/", team.index, name="team"),
    path("team/members/<uuid:pk>/", team.member, name="team-member"),
    path("team/members/<uuid:pk>/remove/", team.member_remove, name="team-member-remove"),
    path(
        "team/invitations/<uuid:pk>/withdraw/",
        team.invitation_revoke,
        name="team-invitation-revoke",
    ),
    path("locations/", locations.index, name="locations"),
    path("locations/<uuid:pk>/", locations.edit, name="location"),
    path("locations/<uuid:pk>/move/", locations.move, name="location-move"),
    path("locations/<uuid:pk>/delete/", locations.delete, name="location-delete"),
]
