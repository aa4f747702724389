"""The owner's settings validators: an IANA time zone and a region phonenumbers knows."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("field", "value"), [("time_zone", "Mars/Olympus"), ("default_region", "XX")]
)
def test_invalid_time_zone_or_region_is_refused(field, value):
    user = UserFactory.build(**{field: value})
    with pytest.raises(ValidationError) as excinfo:
        user.full_clean(exclude=["password"])
    assert field in excinfo.value.message_dict
