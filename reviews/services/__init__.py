"""Workflows of the reviews app: keyword-only ``<entity>_<action>`` functions that own their
transaction.

Views, commands and tasks parse input and call one of these; no network I/O happens inside a
transaction. One module per concern, all public names re-exported here; the modules import each
other downward only (``sending`` → ``outcomes`` → ``opt_outs`` → ``lifecycle`` → ``dispatch``).
A result a caller branches on, logs or counts is one ``enum.StrEnum`` (its values are the strings
logs, metrics and stored rows carry), never a class of string constants:

* ``contacts``: ``contact_add`` only (``ContactAddOutcome``, ``ContactAddResult``);
* ``dispatch``: ``messages_dispatch_due`` (due rows → send tasks), lease recovery, the
  on-commit kick;
* ``sending``: ``messages_send`` (claim, render, call the channel);
* ``outcomes``: recording what the provider answered (sent, failed, retry, unknown), and
  ``SendResult``, what became of each message a send task carried;
* ``lifecycle``: a request's lock and what comes next (``review_request_advance``);
* ``provider_events``: status callbacks, tracking events, ``messages_reconcile_unknown``
  (``ProviderOutcome`` in, ``ProviderEventResult`` out);
* ``opt_outs``: opt-out and opt-in, the audit, SMS replies, e-mail unsubscribes;
* ``engagement``: clicks on review-site links and private feedback;
* ``staff``: ``message_resend``, ``review_request_cancel`` (``CancelRefused``),
  ``review_request_send_now``;
* ``events``: what each change reports to webhooks (``events.services.event_record``, in the
  change's transaction), imported by the modules above it;
* ``imports``: ``contacts_import`` (CSV files through ``contact_add``);
* ``business``: every business and review-site service, whoever calls it (the portal, the
  admin, ``create_business``, ``create_location``): ``business_create`` (with its first
  location), profile and policy, what a location sets differently
  (``location_settings_update``), review sites per location (add, update, remove, move,
  reorder; ``messages_release_waiting`` when a location's first site arrives), message wording
  (the account's or a location's), and pinning rows with no location before the default
  location changes (``location_rows_pin``);
* ``locations``: ``location_requests_move`` (staff: a location's requests to another location of
  the account, in batches).
"""

from .business import (
    business_create,
    business_settings_update,
    location_rows_pin,
    location_settings_update,
    message_template_draft,
    message_template_reset,
    message_template_save,
    messages_release_waiting,
    review_site_add,
    review_site_move,
    review_site_remove,
    review_site_update,
    review_sites_reorder,
)
from .contacts import ContactAddOutcome, ContactAddResult, contact_add
from .dispatch import (
    DispatchResult,
    dispatcher_kick,
    messages_dispatch_due,
    messages_dispatch_preview,
)
from .engagement import click_record, feedback_leave, feedback_notify_owner
from .imports import ImportFileError, ImportReport, contacts_import
from .locations import location_requests_move
from .opt_outs import (
    contact_email_unsubscribe,
    contacts_opt_in,
    contacts_opt_out,
    opt_out_events_purge,
    sms_reply_record,
)
from .outcomes import SendResult
from .provider_events import (
    ProviderEventResult,
    ProviderOutcome,
    email_event_record,
    message_provider_status_apply,
    messages_reconcile_unknown,
    twilio_status_record,
)
from .sending import message_send, messages_send
from .staff import (
    CancelRefused,
    ResendRefused,
    SendNowRefused,
    message_resend,
    review_request_cancel,
    review_request_send_now,
)

__all__ = [
    "CancelRefused",
    "ContactAddOutcome",
    "ContactAddResult",
    "DispatchResult",
    "ImportFileError",
    "ImportReport",
    "ProviderEventResult",
    "ProviderOutcome",
    "ResendRefused",
    "SendNowRefused",
    "SendResult",
    "business_create",
    "business_settings_update",
    "click_record",
    "contact_add",
    "contact_email_unsubscribe",
    "contacts_import",
    "contacts_opt_in",
    "contacts_opt_out",
    "dispatcher_kick",
    "email_event_record",
    "feedback_leave",
    "feedback_notify_owner",
    "location_requests_move",
    "location_rows_pin",
    "location_settings_update",
    "message_provider_status_apply",
    "message_resend",
    "message_send",
    "message_template_draft",
    "message_template_reset",
    "message_template_save",
    "messages_dispatch_due",
    "messages_dispatch_preview",
    "messages_reconcile_unknown",
    "messages_release_waiting",
    "messages_send",
    "opt_out_events_purge",
    "review_request_cancel",
    "review_request_send_now",
    "review_site_add",
    "review_site_move",
    "review_site_remove",
    "review_site_update",
    "review_sites_reorder",
    "sms_reply_record",
    "twilio_status_record",
]
