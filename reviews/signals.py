"""What the reviews app tells the apps above it (they import this module; reviews imports none
of them)."""

from django.dispatch import Signal

# Sent by ``location_requests_move`` once it has moved requests (``sender``: ``ReviewRequest``;
# ``owner_id``, ``from_location_id``, ``to_location_id``, ``moved``): whatever counted those
# requests by location (the activity rollup) counts them again.
location_requests_moved = Signal()
