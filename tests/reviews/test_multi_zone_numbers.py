"""Numbers that span time zones: the business's clock when it is one of them, else the hours
every zone shares; the API's message and the portal say which."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from reviews.models import BusinessSettings
from reviews.sending_windows import ZoneBasis, send_zones
from reviews.services import contact_add
from tests.factories import ReviewSiteFactory, UserFactory
from tests.support.contacts import contact_input

pytestmark = pytest.mark.django_db

AU_MOBILE = "+61412345678"  # Sydney to Perth, and Christmas and Cocos Islands (UTC+6:30)
SYDNEY = ZoneInfo("Australia/Sydney")


def business(time_zone: str):
    owner = UserFactory.create(time_zone=time_zone, default_region="AU")
    ReviewSiteFactory(owner=owner)
    BusinessSettings.objects.create(owner=owner)  # SMS only between 08:00 and 21:00
    return owner


def test_the_business_zone_decides_when_the_number_may_be_in_it():
    zones, basis = send_zones(AU_MOBILE, SYDNEY)
    assert (zones, basis) == ((SYDNEY,), ZoneBasis.BUSINESS_AMONG_NUMBER)
    # Melbourne is not in the number's list but keeps Sydney's clock all year.
    melbourne = ZoneInfo("Australia/Melbourne")
    assert send_zones(AU_MOBILE, melbourne) == ((melbourne,), ZoneBasis.BUSINESS_AMONG_NUMBER)
    zones, basis = send_zones(AU_MOBILE, ZoneInfo("Europe/London"))
    assert basis == ZoneBasis.EVERY_ZONE and len(zones) == 8
    assert send_zones("+14155552671", SYDNEY)[1] == ZoneBasis.NUMBER
    assert send_zones("", SYDNEY) == ((SYDNEY,), ZoneBasis.BUSINESS)


def test_a_sydney_business_texts_an_australian_mobile_from_8_sydney_time(time_machine):
    owner = business("Australia/Sydney")
    # 21:30 in Sydney (AEST, UTC+10).
    time_machine.move_to(datetime(2026, 6, 10, 11, 30, tzinfo=UTC), tick=False)
    result = contact_add(owner=owner, data=contact_input(owner, {"mobile_phone_number": AU_MOBILE}))
    assert result.review_request.scheduled_for == datetime(2026, 6, 10, 22, 0, tzinfo=UTC)
    assert (
        "SMS messages go out only between 08:00 and 21:00 in the business's time zone "
        "(Australia/Sydney), one of the 8 time zones the phone number may be in."
    ) in result.message


def test_a_business_elsewhere_gets_only_the_hours_every_zone_shares(time_machine):
    owner = business("Europe/London")
    time_machine.move_to(datetime(2026, 6, 10, 11, 30, tzinfo=UTC), tick=False)
    result = contact_add(owner=owner, data=contact_input(owner, {"mobile_phone_number": AU_MOBILE}))
    at = result.review_request.scheduled_for
    # 08:00 on the Cocos Islands (UTC+6:30), the last zone to wake up: 11:30 in Sydney (AEST;
    # 12:30 in summer).
    assert at == datetime(2026, 6, 11, 1, 30, tzinfo=UTC)
    assert at.astimezone(SYDNEY).strftime("%H:%M") == "11:30"
    assert "in every time zone the phone number may be in (Australia/Adelaide" in result.message
    assert "the business's time zone is not one of them" in result.message


def test_the_portal_says_whose_clock_the_first_message_waits_for(client, time_machine):
    owner = business("Australia/Sydney")
    time_machine.move_to(datetime(2026, 6, 10, 11, 30, tzinfo=UTC), tick=False)
    request = contact_add(
        owner=owner, data=contact_input(owner, {"mobile_phone_number": AU_MOBILE})
    ).review_request
    client.force_login(owner)
    page = client.get(f"/portal/requests/{request.pk}/").content.decode()
    assert "in the business&#x27;s time zone (Australia/Sydney), one of the 8 time zones" in page
