"""Staff views of the reviews app (the back office), one module per aggregate.

Contacts, review requests and messages are read-only rows here: they are written by
``reviews.services`` (``contact_add`` and the delivery engine), whose rules (dedup keys, one
active request, opt-outs, claim-before-send) an admin form would bypass. Every staff write goes
through a service: the CSV import (``contacts_import`` → ``contact_add``), the request actions
(``review_request_cancel``, ``review_request_send_now``, ``message_resend``), business settings
(``business_settings_update``), review sites (``review_site_add``, ``review_site_update``,
``review_site_remove``: the portal's rules, and a first site releases held requests) and message
wording (``message_template_save``).

Extra pages, under the models they belong to: ``contact/import/`` (CSV import) and
``messagetemplate/preview/`` (the live preview the template form calls as staff type). The staff
dashboard at ``reviewrequest/dashboard/`` is added from above by the reporting app
(``activity/admin.py``), which this app does not import.
"""

from . import business, contacts, requests

__all__ = ["business", "contacts", "requests"]
