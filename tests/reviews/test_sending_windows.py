"""Quiet hours (reviews.sending_windows): the first allowed instant, exact across DST changes,
midnight and several zones; and numbers that span time zones: the business's clock when it is one
of them, else the hours every zone shares, as the API's message and the portal say."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.models import BusinessSettings
from reviews.sending_windows import (
    SendingWindow,
    ZoneBasis,
    first_instant_at_wall_time,
    next_allowed_time,
    recipient_time_zones,
    send_zones,
)
from reviews.services import contact_add
from tests.factories import ReviewSiteFactory, UserFactory
from tests.support.contacts import contact_input

NEW_YORK = ZoneInfo("America/New_York")
LOS_ANGELES = ZoneInfo("America/Los_Angeles")
CHICAGO = ZoneInfo("America/Chicago")
LONDON = ZoneInfo("Europe/London")
DAY = SendingWindow(time(8), time(21))


def utc(year: int, month: int, day: int, hour: int, minute: int) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def local(zone: ZoneInfo, year: int, month: int, day: int, hour: int, minute: int) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=zone)


def test_inside_the_window_the_time_is_kept():
    at = local(NEW_YORK, 2026, 6, 10, 12, 0)
    assert next_allowed_time(at, DAY, [NEW_YORK]) == at


def test_the_start_is_allowed_and_the_end_is_not():
    start = local(NEW_YORK, 2026, 6, 10, 8, 0)
    assert next_allowed_time(start, DAY, [NEW_YORK]) == start
    end = local(NEW_YORK, 2026, 6, 10, 21, 0)
    assert next_allowed_time(end, DAY, [NEW_YORK]) == local(NEW_YORK, 2026, 6, 11, 8, 0)


def test_before_the_window_waits_for_the_same_mornings_start():
    at = local(NEW_YORK, 2026, 6, 10, 3, 17)
    assert next_allowed_time(at, DAY, [NEW_YORK]) == local(NEW_YORK, 2026, 6, 10, 8, 0)


def test_late_evening_waits_for_the_next_morning_in_the_recipients_zone():
    # 03:00 UTC is 20:00 in Los Angeles (allowed) but 23:00 in New York (quiet).
    at = utc(2026, 6, 11, 3, 0)
    assert next_allowed_time(at, DAY, [LOS_ANGELES]) == at
    assert next_allowed_time(at, DAY, [NEW_YORK]) == local(NEW_YORK, 2026, 6, 11, 8, 0)


def test_window_across_the_spring_forward_night():
    # New York, 8 March 2026: clocks jump 02:00 EST -> 03:00 EDT. 23:30 the evening before
    # waits until 08:00 EDT, which is 12:00 UTC (not 13:00 as EST would give).
    at = local(NEW_YORK, 2026, 3, 7, 23, 30)
    assert next_allowed_time(at, DAY, [NEW_YORK]) == utc(2026, 3, 8, 12, 0)


def test_window_across_the_fall_back_night():
    # New York, 1 November 2026: clocks go back 02:00 EDT -> 01:00 EST; 08:00 EST is 13:00 UTC.
    at = local(NEW_YORK, 2026, 10, 31, 22, 0)
    assert next_allowed_time(at, DAY, [NEW_YORK]) == utc(2026, 11, 1, 13, 0)


def test_a_start_skipped_by_spring_forward_opens_when_the_clocks_jump():
    night = SendingWindow(time(2, 30), time(6, 0))
    at = local(NEW_YORK, 2026, 3, 8, 1, 0)  # 06:00 UTC
    # 02:30 does not exist that night; the window opens at 03:00 EDT = 07:00 UTC.
    assert next_allowed_time(at, night, [NEW_YORK]) == utc(2026, 3, 8, 7, 0)
    assert first_instant_at_wall_time(date(2026, 3, 8), time(2, 30), NEW_YORK) == utc(
        2026, 3, 8, 7, 0
    )


def test_a_start_that_happens_twice_opens_the_first_time():
    # 01:30 occurs at 05:30 UTC (EDT) and again at 06:30 UTC (EST) on 1 November 2026.
    assert first_instant_at_wall_time(date(2026, 11, 1), time(1, 30), NEW_YORK) == utc(
        2026, 11, 1, 5, 30
    )


def test_window_spanning_midnight():
    night = SendingWindow(time(22), time(6))
    assert night.contains(time(23)) and night.contains(time(5, 59))
    assert not night.contains(time(6)) and not night.contains(time(12))
    inside = local(LONDON, 2026, 6, 10, 23, 15)
    assert next_allowed_time(inside, night, [LONDON]) == inside
    after_midnight = local(LONDON, 2026, 6, 11, 2, 0)
    assert next_allowed_time(after_midnight, night, [LONDON]) == after_midnight
    morning = local(LONDON, 2026, 6, 11, 6, 0)
    assert next_allowed_time(morning, night, [LONDON]) == local(LONDON, 2026, 6, 11, 22, 0)


def test_several_zones_must_all_be_inside_the_window():
    # 12:30 UTC is 08:30 in New York but 07:30 in Chicago: wait for Chicago's 08:00.
    at = utc(2026, 6, 10, 12, 30)
    assert next_allowed_time(at, DAY, [NEW_YORK, CHICAGO]) == utc(2026, 6, 10, 13, 0)
    # 00:30 UTC is 20:30 in New York but 17:30 in Los Angeles: fine for both.
    evening = utc(2026, 6, 11, 0, 30)
    assert next_allowed_time(evening, DAY, [NEW_YORK, LOS_ANGELES]) == evening
    # 01:30 UTC is 21:30 in New York: the next time good for both is 08:00 in Los Angeles.
    late = utc(2026, 6, 11, 1, 30)
    assert next_allowed_time(late, DAY, [NEW_YORK, LOS_ANGELES]) == local(
        LOS_ANGELES, 2026, 6, 11, 8, 0
    )


def test_zones_without_a_common_allowed_hour_give_none():
    office = SendingWindow(time(9), time(17))
    half_a_day_apart = [ZoneInfo("Asia/Kolkata"), LOS_ANGELES]  # 12.5 hours in June
    assert next_allowed_time(utc(2026, 6, 10, 12, 0), office, half_a_day_apart) is None


def test_a_toll_free_number_waits_for_an_hour_allowed_in_every_north_american_zone():
    zones = recipient_time_zones("+18005550199")  # from Guam (UTC+10) to Adak (UTC-9)
    result = next_allowed_time(utc(2026, 6, 10, 12, 0), DAY, zones)
    assert result == utc(2026, 6, 10, 22, 0)  # 08:00 in Guam, 19:30 in St. John's
    assert all(DAY.contains(result.astimezone(zone).time()) for zone in zones)


def test_equal_start_and_end_means_no_quiet_hours():
    at = local(NEW_YORK, 2026, 6, 10, 3, 0)
    assert next_allowed_time(at, SendingWindow(time(8), time(8)), [NEW_YORK]) == at


def test_naive_datetimes_are_refused():
    with pytest.raises(ValueError, match="timezone-aware"):
        next_allowed_time(datetime(2026, 6, 10, 12, 0), DAY, [NEW_YORK])  # noqa: DTZ001


ZONES = [
    NEW_YORK,
    LOS_ANGELES,
    LONDON,
    ZoneInfo("Australia/Lord_Howe"),  # 30-minute DST shift
    ZoneInfo("Asia/Kolkata"),
    ZoneInfo("America/Santiago"),  # DST changes at midnight
    ZoneInfo("Pacific/Chatham"),
]


@settings(max_examples=400, deadline=None)
@given(
    st.datetimes(min_value=datetime(2024, 1, 1), max_value=datetime(2030, 12, 31)),  # noqa: DTZ001
    st.sampled_from(ZONES),
    st.integers(0, 23),
    st.integers(0, 23),
)
def test_result_is_the_first_allowed_instant(naive, zone, start_hour, end_hour):
    if start_hour == end_hour:
        end_hour = (end_hour + 1) % 24
    window = SendingWindow(time(start_hour), time(end_hour))
    at = naive.replace(tzinfo=UTC, microsecond=0)
    result = next_allowed_time(at, window, [zone])
    assert result is not None and result >= at
    assert window.contains(result.astimezone(zone).time())
    if result > at:
        # Every minute before it was quiet (checked on the wall clock).
        probe = result - timedelta(minutes=1)
        while probe >= at:
            assert not window.contains(probe.astimezone(zone).time())
            probe -= timedelta(minutes=29)
    assert result - at < timedelta(days=2)


def test_recipient_zones_come_from_the_phone_number():
    assert recipient_time_zones("+14155552671") == (LOS_ANGELES,)
    assert recipient_time_zones("+442079460958") == (LONDON,)
    assert recipient_time_zones("") == ()
    # Toll-free: every North American zone.
    assert len(recipient_time_zones("+18005550199")) > 10


AU_MOBILE = "+61412345678"  # Sydney to Perth, and Christmas and Cocos Islands (UTC+6:30)


SYDNEY = ZoneInfo("Australia/Sydney")


def business(time_zone: str):
    owner = UserFactory.create(time_zone=time_zone, default_region="AU")
    ReviewSiteFactory(owner=owner)
    BusinessSettings.objects.create(owner=owner)  # SMS only between 08:00 and 21:00
    return owner


@pytest.mark.django_db
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


@pytest.mark.django_db
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


@pytest.mark.django_db
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


@pytest.mark.django_db
def test_the_portal_says_whose_clock_the_first_message_waits_for(client, time_machine):
    owner = business("Australia/Sydney")
    time_machine.move_to(datetime(2026, 6, 10, 11, 30, tzinfo=UTC), tick=False)
    request = contact_add(
        owner=owner, data=contact_input(owner, {"mobile_phone_number": AU_MOBILE})
    ).review_request
    client.force_login(owner)
    page = client.get(f"/portal/requests/{request.pk}/").content.decode()
    assert "in the business&#x27;s time zone (Australia/Sydney), one of the 8 time zones" in page
