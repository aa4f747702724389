"""Review sites: add (Yelp refused with the model's message), reorder, remove."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from reviews.models import ReviewSite
from reviews.services import review_sites_reorder
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(db):
    """A business that lists no review site yet: these tests add them."""
    return UserFactory()


URL = "/portal/settings/sites/"


def labels(owner) -> list[str]:
    return list(
        ReviewSite.objects.filter(owner=owner)
        .order_by("position", "created_at")
        .values_list("label", flat=True)
    )


def test_adding_a_link_names_the_site_and_puts_it_last(browser, owner):
    ReviewSite.objects.create(owner=owner, url="https://www.trustpilot.com/review/acme", label="TP")
    response = browser.post(URL, {"url": "g.page/r/acme-plumbing/review", "label": ""})
    assert response.status_code == 302
    site = ReviewSite.objects.get(owner=owner, kind="google")
    assert (site.url, site.label, site.position) == (
        "https://g.page/r/acme-plumbing/review",
        "Google",
        1,
    )
    assert labels(owner) == ["TP", "Google"]
    assert b"Added Google." in browser.get(URL).content


def test_yelp_is_refused_with_the_models_message(browser, owner):
    response = browser.post(URL, {"url": "https://www.yelp.com/biz/acme-plumbing"})
    assert response.status_code == 200
    html = response.content.decode()
    assert '<ul class="errorlist" id="id_url_error"><li>Yelp does not allow asking' in html
    assert not ReviewSite.objects.exists()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("https://g.page/r/acme/review", "This link is already on your list."),
        ("not a link", "Enter a valid URL."),
        ("", "This field is required."),
    ],
)
def test_bad_links_are_refused_next_to_the_field(browser, owner, url, message):
    ReviewSite.objects.create(owner=owner, url="https://g.page/r/acme/review", label="Google")
    html = browser.post(URL, {"url": url}).content.decode()
    assert f'id="id_url_error"><li>{message}</li>' in html
    assert ReviewSite.objects.count() == 1


def test_sites_move_up_and_down(browser, owner):
    for position, label in enumerate(["Google", "Facebook", "Trustpilot"]):
        ReviewSite.objects.create(
            owner=owner, url=f"https://example.com/{label}", label=label, position=position
        )
    trustpilot = ReviewSite.objects.get(owner=owner, label="Trustpilot")
    response = browser.post(f"{URL}{trustpilot.pk}/move/", {"direction": "up"})
    assert response["Location"] == f"{URL}#site-{trustpilot.pk}"
    assert labels(owner) == ["Google", "Trustpilot", "Facebook"]
    google = ReviewSite.objects.get(owner=owner, label="Google")
    browser.post(f"{URL}{google.pk}/move/", {"direction": "down"})
    assert labels(owner) == ["Trustpilot", "Google", "Facebook"]
    browser.post(f"{URL}{trustpilot.pk}/move/", {"direction": "up"})  # already first
    assert labels(owner) == ["Trustpilot", "Google", "Facebook"]
    assert list(
        ReviewSite.objects.filter(owner=owner)
        .order_by("position")
        .values_list("position", flat=True)
    ) == [0, 1, 2]


def test_removing_a_site(browser, owner):
    site = ReviewSite.objects.create(
        owner=owner, url="https://g.page/r/acme/review", label="Google"
    )
    response = browser.post(f"{URL}{site.pk}/remove/", follow=True)
    assert b"Removed Google." in response.content
    assert not ReviewSite.objects.exists()
    assert browser.post(f"{URL}{site.pk}/remove/").status_code == 404


def test_the_review_page_shows_sites_in_the_owners_order(browser, client, owner):
    from tests.support.portal_data import add_request

    for position, label in enumerate(["Google", "Facebook"]):
        ReviewSite.objects.create(
            owner=owner, url=f"https://example.com/{label}", label=label, position=position
        )
    facebook = ReviewSite.objects.get(label="Facebook")
    browser.post(f"{URL}{facebook.pk}/move/", {"direction": "up"})
    request = add_request(owner, first_name="Jane", email="jane@example.com")
    page = client.get(f"/r/{request.token}/").content.decode()
    assert page.index(">Facebook<") < page.index(">Google<")


def test_reordering_must_name_every_site_once(owner, other_owner):
    mine = ReviewSite.objects.create(owner=owner, url="https://example.com/a", label="A")
    theirs = ReviewSite.objects.create(owner=other_owner, url="https://example.com/b", label="B")
    for ids in ([mine.pk, theirs.pk], [mine.pk, mine.pk], []):
        with pytest.raises(ValidationError):
            review_sites_reorder(owner=owner, site_ids=ids)
    assert review_sites_reorder(owner=owner, site_ids=[mine.pk]) == [mine]
