"""Reads of the reviews app (HackSoft style: selectors read, services write). One module per
concern, all public names re-exported here:

* ``requests``: the search rule shared by the portal and the admin (``contact_search``), the
  lookups the services need, one request's timeline;
* ``activity``: activity over time, each series an indexed range of its timestamp or the
  rollup's hours: per day (``review_request_daily_counts``), a period's totals
  (``review_request_period_counts``), the rollup's reads and rows, failures and opt-outs.
"""

from .activity import (
    DAILY_SERIES,
    ROLLUP_KEY,
    RollupRead,
    activity_hourly,
    activity_hourly_querysets,
    activity_rollup_boundary,
    activity_rollup_closed_until,
    activity_rollup_read,
    activity_rollup_rows,
    message_failure_reasons,
    message_failures_by_code,
    message_newest_failures,
    opt_out_counts,
    review_request_daily_counts,
    review_request_daily_querysets,
    review_request_period_counts,
)
from .requests import (
    MIN_PHONE_DIGITS,
    SEARCH_MAX_LENGTH,
    SEARCH_MAX_WORDS,
    TimelineEvent,
    contact_search,
    contacts_find,
    phone_search_digits,
    review_request_blocking,
    review_request_latest,
    review_request_timeline,
    review_requests_of,
)

__all__ = [
    "DAILY_SERIES",
    "MIN_PHONE_DIGITS",
    "ROLLUP_KEY",
    "SEARCH_MAX_LENGTH",
    "SEARCH_MAX_WORDS",
    "RollupRead",
    "TimelineEvent",
    "activity_hourly",
    "activity_hourly_querysets",
    "activity_rollup_boundary",
    "activity_rollup_closed_until",
    "activity_rollup_read",
    "activity_rollup_rows",
    "contact_search",
    "contacts_find",
    "message_failure_reasons",
    "message_failures_by_code",
    "message_newest_failures",
    "opt_out_counts",
    "phone_search_digits",
    "review_request_blocking",
    "review_request_daily_counts",
    "review_request_daily_querysets",
    "review_request_latest",
    "review_request_period_counts",
    "review_request_timeline",
    "review_requests_of",
]
