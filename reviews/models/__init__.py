"""Review data, one module per aggregate:

* ``contacts``: ``Contact`` (dedup keys, channels, opt-outs) and the ``OptOutEvent`` audit;
* ``sites``: ``ReviewSite``, a location's public review sites;
* ``business``: ``BusinessSettings``, what a business configures (the policy: channels,
  follow-ups, cooldown, sending window);
* ``locations``: where a row is (``location_key``, ``LocationPolicy``) and what one location
  sets differently from its account (``LocationSettings``);
* ``templates``: ``MessageTemplate``, a business's own wording;
* ``requests``: ``ReviewRequest`` and its ``Message`` rows (the state machines the delivery
  engine drives), ``Click`` and ``Feedback``.

Row rules and state transitions live on the models; workflows that touch several rows live in
``reviews/services/``. The data model is described in ``docs/architecture/data-model.md``.
"""

from .business import (
    MAX_FOLLOW_UPS,
    BusinessSettings,
    PlannedStep,
    SendTime,
    default_follow_up_offsets,
)
from .contacts import Channel, Contact, OptOutEvent
from .locations import (
    NO_LOCATION,
    LocationPolicy,
    LocationSettings,
    UnknownLocation,
    location_key,
)
from .requests import (
    Click,
    Feedback,
    InvalidTransition,
    Message,
    ReviewRequest,
    messages_for,
    new_public_token,
)
from .sites import ReviewSite
from .templates import (
    MAX_EMAIL_TEMPLATE_CHARS,
    MAX_SMS_TEMPLATE_CHARS,
    SAMPLE_MERGE_VALUES,
    STOP_LINE,
    MessageTemplate,
)

__all__ = [
    "MAX_EMAIL_TEMPLATE_CHARS",
    "MAX_FOLLOW_UPS",
    "MAX_SMS_TEMPLATE_CHARS",
    "NO_LOCATION",
    "SAMPLE_MERGE_VALUES",
    "STOP_LINE",
    "BusinessSettings",
    "Channel",
    "Click",
    "Contact",
    "Feedback",
    "InvalidTransition",
    "LocationPolicy",
    "LocationSettings",
    "Message",
    "MessageTemplate",
    "OptOutEvent",
    "PlannedStep",
    "ReviewRequest",
    "ReviewSite",
    "SendTime",
    "UnknownLocation",
    "default_follow_up_offsets",
    "location_key",
    "messages_for",
    "new_public_token",
]
