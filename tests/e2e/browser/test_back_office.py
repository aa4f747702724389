"""The staff back office in a real browser: CSV import report, live preview (the dashboard's chart:
tests/e2e/browser/test_admin_dashboard.py)."""

from __future__ import annotations

import pytest

from reviews.models import BusinessSettings, Contact
from tests.factories import DEFAULT_PASSWORD, UserFactory
from tests.support.browser import collect_errors, screenshot

pytestmark = pytest.mark.browser


CSV = """First Name,Last Name,E-mail,Mobile,Company,Shoe size
Maria,Garcia,maria.garcia@example.com,+14155550101,,38
James,Wilson,james.wilson@example,,,44
Aiko,Tanaka,,(415) 555-0103,,37
Maria,Garcia,MARIA.GARCIA@example.com,,,38
Noah,Brown,,12,,42
,,,,,
Emma,Martin,emma.martin@example.com,,Martin & Co,39
"""


@pytest.fixture
def staff_user(transactional_db):
    return UserFactory(email="staff@example.com", is_staff=True, is_superuser=True)


@pytest.fixture
def business(transactional_db):
    owner = UserFactory(email="owner@acme-plumbing.example", business_name="Acme Plumbing")
    BusinessSettings.objects.create(owner=owner)
    return owner


def admin_log_in(page, user, next_url: str) -> None:
    page.goto(f"/admin/login/?next={next_url}")
    page.locator("#id_username").fill(user.email)
    page.locator("#id_password").fill(DEFAULT_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"**{next_url}")


def test_staff_import_a_csv_and_see_the_per_row_report(page, staff_user, business, tmp_path):
    errors = collect_errors(page)
    path = tmp_path / "acme-customers.csv"
    path.write_text(CSV)
    admin_log_in(page, staff_user, "/admin/reviews/contact/")
    page.get_by_role("link", name="Import contacts from CSV").click()
    page.get_by_label("Business (login e-mail)").fill(business.email)
    page.locator("#id_file").set_input_files(str(path))
    page.get_by_role("button", name="Import").click()

    report = page.get_by_test_id("import-report")
    report.wait_for()
    assert "6 rows read, 3 review requests were scheduled, 1 was skipped" in report.inner_text()
    # Errors and skipped rows in one list, in the file's row order.
    rows = page.get_by_test_id("import-issues").locator("tbody tr")
    assert rows.count() == 3
    assert (
        rows.nth(0)
        .inner_text()
        .startswith("3\tNot imported\tE-mail: Must have a public domain with a dot")
    )
    assert rows.nth(1).inner_text().startswith("5\tImported, no new request\t")
    assert "already has a review request" in rows.nth(1).inner_text()  # row 5 repeats row 2
    assert rows.nth(2).inner_text().startswith("6\tNot imported\tMobile phone number: Is not")
    assert "Shoe size" in report.inner_text()  # the ignored column
    assert Contact.objects.filter(owner=business).count() == 3
    assert Contact.objects.get(first_name="Aiko").phone == "+14155550103"
    assert errors == []
    screenshot(page, "admin-import-report")


def test_template_preview_in_admin_updates_as_staff_type(page, staff_user, business):
    errors = collect_errors(page)
    admin_log_in(page, staff_user, "/admin/reviews/messagetemplate/add/")
    page.locator("#id_owner").fill(str(business.pk))
    page.locator("#id_channel").select_option("sms")
    page.locator("#id_step").fill("0")
    body = page.locator("#id_body")
    body.fill("{business_name}: thanks {first_name}! Review us: {review_link}")
    preview = page.get_by_test_id("sms-preview")
    preview.wait_for()
    assert preview.inner_text().startswith("Acme Plumbing: thanks Jane! Review us: http")
    assert preview.inner_text().endswith("Reply STOP to opt out")
    assert "1 segment" in page.locator(".segments").inner_text()

    body.fill("{business_name}: thanks {first_name} 😊 " + "x" * 80 + " {review_link}")
    page.wait_for_function(
        "document.querySelector('.segments') && "
        "document.querySelector('.segments').textContent.includes('3 segments')"
    )
    body.fill("No link here")
    page.get_by_text("Must contain {review_link}.").wait_for()
    body.fill("{business_name}: thanks {first_name}! {review_link}")
    preview.wait_for()
    screenshot(page, "admin-template-preview")
    page.get_by_role("button", name="Save", exact=True).click()
    page.get_by_text("was added successfully").wait_for()
    assert errors == []
