"""Signals of the accounts app, for the apps above it (it imports none of them).

``default_location_changing``: the account's default location (its first) is about to become
another one, or be deleted. A row of another app with no location belongs to the default, so
such rows must be pinned to ``location`` (the default until now) before the change, or they
would move with it: the reviews app pins its requests and review sites
(``reviews.receivers``). Sent with ``account`` (the owner) and ``location``, once before the
change's transaction (the bulk of the rows, in batches) and once inside it, after the account's
locations are locked (what was written meanwhile).
"""

from django.dispatch import Signal

default_location_changing = Signal()
