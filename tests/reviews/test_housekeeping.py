"""The smaller pieces: the on-commit kick, mailto unsubscribes, audit retention, the admin."""

from __future__ import annotations

from datetime import timedelta

import pytest
from anymail.inbound import AnymailInboundMessage
from anymail.signals import AnymailInboundEvent, inbound
from django.core.cache import cache
from django.utils import timezone

from reviews import tasks
from reviews.models import Contact, MessageTemplate, OptOutEvent
from reviews.services import (
    contact_add,
    contact_email_unsubscribe,
    dispatcher_kick,
    opt_out_events_purge,
)
from reviews.services.dispatch import KICK_CACHE_KEY
from tests.support.contacts import contact_input
from tests.support.delivery import email_request
from tests.support.row_counts import statement_row_counts

pytestmark = pytest.mark.django_db


def test_a_contact_due_now_kicks_the_dispatcher_on_commit_and_a_later_one_does_not(
    business, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as now_callbacks:
        contact_add(
            owner=business,
            data=contact_input(business, {"email": "a@example.com", "delay_hours": 0}),
        )
    assert dispatcher_kick in now_callbacks
    with django_capture_on_commit_callbacks() as later_callbacks:
        contact_add(
            owner=business,
            data=contact_input(business, {"email": "b@example.com", "delay_hours": 2}),
        )
    assert dispatcher_kick not in later_callbacks


def test_the_kick_never_raises_when_the_broker_is_down(monkeypatch):
    cache.delete(KICK_CACHE_KEY)

    def broker_down(*args, **kwargs):
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr(tasks.dispatch_due_messages, "apply_async", broker_down)
    dispatcher_kick()  # logged, not raised: the beat sweep sends the message anyway


def test_a_mailto_unsubscribe_through_the_esps_inbound_webhook_opts_out(business):
    request = email_request(business)
    message = AnymailInboundMessage.construct(
        from_email=request.contact.email,
        to="unsubscribe@inbound.example.com",
        subject=f"unsubscribe {request.token}",
        text="",
    )
    inbound.send(
        sender=None,
        event=AnymailInboundEvent(event_type="inbound", message=message, event_id="in-1"),
        esp_name="Postmark",
    )
    contact = Contact.objects.get(pk=request.contact_id)
    assert contact.email_opt_out_source == "email_unsubscribe"
    other = AnymailInboundMessage.construct(subject="Hello there", text="hi")
    inbound.send(
        sender=None,
        event=AnymailInboundEvent(event_type="inbound", message=other),
        esp_name="Postmark",
    )
    assert OptOutEvent.objects.count() == 1


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


def test_the_audit_outlives_the_contact(business):
    request = email_request(business)
    contact_email_unsubscribe(token=request.token)
    Contact.objects.filter(pk=request.contact_id).delete()
    event = OptOutEvent.objects.get()
    assert event.contact is None and event.address == request.contact.email


def test_admin_shows_the_sms_segment_count_of_a_template(staff, business):
    template = MessageTemplate(
        owner=business, channel="sms", step=0, body="{business_name}: {review_link}"
    )
    template.full_clean()
    template.save()
    page = staff.get(f"/admin/reviews/messagetemplate/{template.pk}/change/")
    assert page.status_code == 200
    assert "1 segment (GSM-7" in page.content.decode()
    listing = staff.get("/admin/reviews/messagetemplate/")
    assert "1 segment (GSM-7" in listing.content.decode()


def test_admin_refuses_a_template_without_the_review_link(staff, business):
    response = staff.post(
        "/admin/reviews/messagetemplate/add/",
        {"owner": business.pk, "channel": "sms", "step": 0, "subject": "", "body": "Hi"},
    )
    assert response.status_code == 200
    assert "Must contain {review_link}" in response.content.decode()
    assert MessageTemplate.objects.count() == 0


@pytest.mark.parametrize("model", ["click", "feedback", "optoutevent"])
def test_engagement_and_audit_rows_are_read_only_in_admin(staff, model):
    assert staff.get(f"/admin/reviews/{model}/").status_code == 200
    assert staff.get(f"/admin/reviews/{model}/add/").status_code == 403


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
