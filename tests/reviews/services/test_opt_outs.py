"""reviews.services.opt_outs: the opt-out audit kept four years, then purged in bounded batches."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from reviews.models import OptOutEvent
from reviews.services import (
    opt_out_events_purge,
)
from tests.support.delivery import email_request
from tests.support.row_counts import statement_row_counts

pytestmark = pytest.mark.django_db


def test_opt_out_audit_is_kept_four_years_then_purged(business, settings):
    request = email_request(business)
    contact = request.contact
    keep = OptOutEvent.objects.create(
        owner=business,
        contact=contact,
        channel="email",
        action="opt_out",
        source="staff",
        address=contact.email,
    )
    old = OptOutEvent.objects.create(
        owner=business,
        contact=contact,
        channel="email",
        action="opt_out",
        source="staff",
        address=contact.email,
    )
    OptOutEvent.objects.filter(pk=keep.pk).update(
        created_at=timezone.now() - timedelta(days=settings.OPT_OUT_AUDIT_RETENTION_DAYS - 1)
    )
    OptOutEvent.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - timedelta(days=settings.OPT_OUT_AUDIT_RETENTION_DAYS + 1)
    )
    assert opt_out_events_purge() == 1
    assert list(OptOutEvent.objects.values_list("pk", flat=True)) == [keep.pk]


def test_the_opt_out_audit_purge_deletes_in_bounded_batches(business, settings):
    settings.PURGE_BATCH_SIZE = 2
    contact = email_request(business).contact
    OptOutEvent.objects.bulk_create(
        OptOutEvent(
            owner=business,
            contact=contact,
            channel="email",
            action="opt_out",
            source="staff",
            address=contact.email,
        )
        for _ in range(6)
    )
    keep = OptOutEvent.objects.order_by("pk").last()
    old = timezone.now() - timedelta(days=settings.OPT_OUT_AUDIT_RETENTION_DAYS + 1)
    OptOutEvent.objects.exclude(pk=keep.pk).update(created_at=old)
    with statement_row_counts() as counts:
        assert opt_out_events_purge() == 5
    assert max(counts) <= 2
    assert list(OptOutEvent.objects.values_list("pk", flat=True)) == [keep.pk]
