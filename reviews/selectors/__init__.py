"""Reads of the reviews app (HackSoft style: selectors read, services write). One module per
concern, all public names re-exported here:

* ``requests``: the search rule shared by the portal and the admin (``contact_search``), the
  lookups the services need, one request's timeline, and what a member reaches
  (``review_requests_visible``, ``contacts_visible``, by ``accounts.access``), and what moving a
  location's requests would do (``location_requests_move_preview``).

Activity over time (the dashboards' series and their rollup) is read by the activity app, above
this one (``activity.selectors``).
"""

from .requests import (
    MIN_PHONE_DIGITS,
    SEARCH_MAX_LENGTH,
    SEARCH_MAX_WORDS,
    MoveEnds,
    RequestsMove,
    TimelineEvent,
    contact_search,
    contacts_find,
    contacts_visible,
    location_requests_move_preview,
    phone_search_digits,
    requests_move_ends,
    review_request_blocking,
    review_request_latest,
    review_request_latest_visible,
    review_request_timeline,
    review_requests_held_back_at,
    review_requests_of,
    review_requests_visible,
)

__all__ = [
    "MIN_PHONE_DIGITS",
    "SEARCH_MAX_LENGTH",
    "SEARCH_MAX_WORDS",
    "MoveEnds",
    "RequestsMove",
    "TimelineEvent",
    "contact_search",
    "contacts_find",
    "contacts_visible",
    "location_requests_move_preview",
    "phone_search_digits",
    "requests_move_ends",
    "review_request_blocking",
    "review_request_latest",
    "review_request_latest_visible",
    "review_request_timeline",
    "review_requests_held_back_at",
    "review_requests_of",
    "review_requests_visible",
]
