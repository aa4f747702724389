"""Workflows of the reviews app: keyword-only ``entity_verb`` functions that own their transaction.

See STYLE.md: views, commands and tasks parse input and call one of these; no network I/O
happens inside a transaction. One module per concern, all public names re-exported here:

* ``contacts``: businesses, review sites, ``add_contact``;
* ``dispatch``: ``dispatch_due`` (due rows → send tasks), lease recovery, the on-commit kick;
* ``sending``: ``send_message`` (claim, render, call the channel, record) and the request's
  lifecycle (``advance``);
* ``provider_events``: status callbacks, tracking events, ``reconcile_unknown``;
* ``opt_outs``: opt-out and opt-in, the audit, SMS replies, e-mail unsubscribes;
* ``engagement``: clicks on review-site links and private feedback;
* ``staff``: ``message_resend``, ``review_request_cancel``, ``review_request_send_now``;
* ``imports``: ``contacts_import`` (CSV files through ``add_contact``);
* ``business``: what an owner configures in the portal: profile and policy, review sites and
  their order, message wording.
"""

from .business import (
    business_settings_update,
    message_template_draft,
    message_template_reset,
    message_template_save,
    review_site_move,
    review_site_remove,
    review_sites_reorder,
)
from .contacts import (
    AddContactOutcome,
    AddContactResult,
    add_contact,
    business_create,
    review_site_add,
)
from .dispatch import DispatchResult, dispatch_due, dispatch_kick, dispatch_preview
from .engagement import click_record, feedback_leave
from .imports import ImportFileError, ImportReport, contacts_import
from .opt_outs import (
    contacts_opt_in,
    contacts_opt_out,
    email_unsubscribe,
    opt_out_events_purge,
    sms_reply_record,
)
from .provider_events import (
    apply_provider_status,
    email_event_record,
    reconcile_unknown,
    twilio_status_record,
)
from .sending import SendResult, send_message, send_messages
from .staff import (
    ResendRefused,
    SendNowRefused,
    message_resend,
    review_request_cancel,
    review_request_send_now,
)

__all__ = [
    "AddContactOutcome",
    "AddContactResult",
    "DispatchResult",
    "ImportFileError",
    "ImportReport",
    "ResendRefused",
    "SendNowRefused",
    "SendResult",
    "add_contact",
    "apply_provider_status",
    "business_create",
    "business_settings_update",
    "click_record",
    "contacts_import",
    "contacts_opt_in",
    "contacts_opt_out",
    "dispatch_due",
    "dispatch_kick",
    "dispatch_preview",
    "email_event_record",
    "email_unsubscribe",
    "feedback_leave",
    "message_resend",
    "message_template_draft",
    "message_template_reset",
    "message_template_save",
    "opt_out_events_purge",
    "reconcile_unknown",
    "review_request_cancel",
    "review_request_send_now",
    "review_site_add",
    "review_site_move",
    "review_site_remove",
    "review_sites_reorder",
    "send_message",
    "send_messages",
    "sms_reply_record",
    "twilio_status_record",
]
