"""Settings: the owner's profile and sending policy, validated by the models, saved together."""

from __future__ import annotations

import re
from datetime import time

import pytest
from django.core.exceptions import ValidationError

from reviews.models import BusinessSettings
from reviews.services import business_settings_update

pytestmark = pytest.mark.django_db

URL = "/portal/settings/"


def form_data(**overrides) -> dict:
    data = {
        "business_name": "Acme Plumbing",
        "sender_name": "Acme Plumbing team",
        "postal_address": "1 Main St\nSpringfield, IL 62701",
        "time_zone": "America/Chicago",
        "default_region": "US",
        "initial_channel": "email",
        "default_delay_hours": "2",
        "follow_up_offsets_hours": "36h, 4, 10 days",
        "follow_up_other_channel": "",
        "cooldown_days": "30",
        "send_window_start": "09:00",
        "send_window_end": "20:30",
        "send_window_applies_to": "all",
    }
    data.update(overrides)
    return data


def test_the_form_shows_the_current_settings(browser, owner):
    BusinessSettings.for_owner(owner)
    html = browser.get(URL).content.decode()
    assert 'value="3, 7"' in html  # [72, 168] hours, written as days
    assert '<option value="America/New_York" selected>America/New York</option>' in html
    assert 'value="08:00"' in html and 'value="21:00"' in html


def test_saving_changes_the_profile_and_the_policy(browser, owner):
    response = browser.post(URL, form_data())
    assert response.status_code == 302
    owner.refresh_from_db()
    policy = BusinessSettings.objects.get(owner=owner)
    assert (owner.business_name, owner.time_zone, owner.default_region) == (
        "Acme Plumbing",
        "America/Chicago",
        "US",
    )
    assert policy.follow_up_offsets_hours == [36, 96, 240]
    assert policy.initial_channel == "email"
    assert policy.follow_up_other_channel is False
    assert (policy.cooldown_days, policy.default_delay_hours) == (30, 2)
    assert (policy.send_window_start, policy.send_window_end) == (time(9), time(20, 30))
    assert policy.send_window_applies_to == "all"
    assert policy.sender_name == "Acme Plumbing team"
    assert policy.postal_address == "1 Main St\nSpringfield, IL 62701"
    assert b"Settings saved." in browser.get(URL).content


def test_no_follow_ups_is_an_empty_field(browser, owner):
    browser.post(URL, form_data(follow_up_offsets_hours=""))
    assert BusinessSettings.objects.get(owner=owner).follow_up_offsets_hours == []


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "follow_up_offsets_hours",
            "7, 3",
            "Each offset from 1 to 8760 hours, increasing (each follow-up after the previous one).",
        ),
        ("follow_up_offsets_hours", "1, 2, 3, 4, 5, 6", "At most 5 follow-ups."),
        ("follow_up_offsets_hours", "soon", "Write days separated by commas"),
        ("follow_up_offsets_hours", "400", "Each offset from 1 to 8760 hours"),
        ("send_window_end", "09:00", "Must differ from the start (or turn quiet hours off)."),
        ("time_zone", "Mars/Olympus", "Select a valid choice."),
        ("default_region", "XX", "Select a valid choice."),
        ("business_name", "", "This field is required."),
        ("cooldown_days", "-1", "Ensure this value is greater than or equal to 0."),
    ],
)
def test_an_invalid_value_is_shown_next_to_its_field_and_nothing_is_saved(
    browser, owner, field, value, message
):
    before = BusinessSettings.for_owner(owner).follow_up_offsets_hours
    response = browser.post(URL, form_data(**{"business_name": "Renamed", field: value}))
    assert response.status_code == 200
    html = response.content.decode()
    error_id = f"id_{field}_error"
    assert f'<ul class="errorlist" id="{error_id}"><li>{message}' in html.replace("&#x27;", "'")
    # The input points at its error, so a screen reader reads it with the field.
    control = re.search(rf'<(?:input|select)[^>]*name="{field}"[^>]*>', html)[0]
    assert re.search(rf'aria-describedby="[^"]*\b{error_id}\b', control)
    assert 'aria-invalid="true"' in control
    owner.refresh_from_db()
    assert owner.business_name != "Renamed"  # profile and policy are saved together or not at all
    assert BusinessSettings.objects.get(owner=owner).follow_up_offsets_hours == before


def test_quiet_hours_may_be_off_with_any_window(browser, owner):
    browser.post(
        URL,
        form_data(
            send_window_start="00:00", send_window_end="00:00", send_window_applies_to="none"
        ),
    )
    assert BusinessSettings.objects.get(owner=owner).send_window_applies_to == "none"


def test_a_legacy_time_zone_set_by_staff_stays_selectable(browser, owner):
    owner.time_zone = "US/Eastern"
    owner.save()
    html = browser.get(URL).content.decode()
    assert '<option value="US/Eastern" selected>' in html
    assert browser.post(URL, form_data(time_zone="US/Eastern")).status_code == 302


def test_the_service_reports_errors_of_both_rows_at_once(owner):
    with pytest.raises(ValidationError) as caught:
        business_settings_update(
            owner=owner, changes={"time_zone": "Nowhere/Land", "cooldown_days": 99999}
        )
    assert set(caught.value.message_dict) == {"time_zone", "cooldown_days"}


def test_the_service_refuses_fields_an_owner_may_not_change(owner):
    with pytest.raises(ValueError, match="is_staff"):
        business_settings_update(owner=owner, changes={"is_staff": True})
    owner.refresh_from_db()
    assert owner.is_staff is False


def test_the_feedback_email_can_be_turned_off_and_on(browser, owner):
    assert BusinessSettings.for_owner(owner).notify_feedback is True
    box = re.search(
        r'<input type="checkbox" name="notify_feedback"[^>]*>', browser.get(URL).content.decode()
    )
    assert " checked" in box[0]
    browser.post(URL, form_data())  # an unticked box is not posted
    assert BusinessSettings.objects.get(owner=owner).notify_feedback is False
    browser.post(URL, form_data(notify_feedback="on"))
    assert BusinessSettings.objects.get(owner=owner).notify_feedback is True
