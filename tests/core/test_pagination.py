"""Keyset pages and capped counts, on real review requests."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core.pagination import capped_count, decode_cursor, encode_cursor, keyset_page
from reviews.models import ReviewRequest
from tests.factories import ReviewRequestFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def requests_with_ties():
    """23 requests of one owner, created at 5 moments only (ties on ``created_at``), plus
    another owner's."""
    owner = UserFactory()
    start = timezone.now()
    made = [ReviewRequestFactory(contact__owner=owner) for _ in range(23)]
    for n, item in enumerate(made):
        ReviewRequest.objects.filter(pk=item.pk).update(created_at=start - timedelta(hours=n % 5))
    ReviewRequestFactory()
    return ReviewRequest.objects.filter(owner=owner)


def test_pages_return_every_row_exactly_once_across_ties_both_ways(requests_with_ties):
    expected = list(requests_with_ties.order_by("-created_at", "-pk").values_list("pk", flat=True))
    seen, pages, page = [], [], keyset_page(requests_with_ties, size=4)
    while True:
        pages.append(page)
        seen += [row.pk for row in page.object_list]
        if not page.older:
            break
        page = keyset_page(requests_with_ties, size=4, after=page.older)
    assert seen == expected  # every row once, in order
    assert [len(p.object_list) for p in pages] == [4, 4, 4, 4, 4, 3]
    assert not pages[0].newer
    # Back from the last page, by the "newer" cursors: the same pages, newest ending first.
    back, page = [], pages[-1]
    while page.newer:
        page = keyset_page(requests_with_ties, size=4, before=page.newer)
        back.append([row.pk for row in page.object_list])
    assert back == [[row.pk for row in p.object_list] for p in reversed(pages[:-1])]


def test_a_bad_cursor_gives_the_newest_page(requests_with_ties):
    newest = [row.pk for row in keyset_page(requests_with_ties, size=4).object_list]
    for cursor in ("x", "bm9wZQ", "WyJub3QgYSB0aW1lIiwiMSJd"):
        for direction in ("after", "before"):
            page = keyset_page(requests_with_ties, size=4, **{direction: cursor})
            assert [row.pk for row in page.object_list] == newest


def test_cursors_round_trip_and_refuse_naive_times(requests_with_ties):
    row = requests_with_ties.first()
    assert decode_cursor(encode_cursor(row)) == (row.created_at, row.pk)
    assert decode_cursor("WyIyMDI2LTAxLTAxVDAwOjAwOjAwIiwgIngiXQ") is None


def test_capped_count(requests_with_ties):
    assert capped_count(requests_with_ties, cap=100) == (23, False)
    assert capped_count(requests_with_ties, cap=23) == (23, False)
    assert capped_count(requests_with_ties, cap=10) == (10, True)
