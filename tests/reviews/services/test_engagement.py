"""Private feedback e-mails the owner (reviews.services.engagement): once, after commit, through
Django's mail path."""

from __future__ import annotations

import pytest
from django.core import mail
from django.core.cache import cache
from django.core.mail import EmailMessage

from config.celery import app as celery_app
from reviews.models import Feedback
from reviews.services import business_settings_update, feedback_notify_owner
from reviews.services.engagement import ip_hash
from reviews.tasks import feedback_notify_owner_task
from tests.support.delivery import email_request

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_feedback_rate():
    cache.delete(f"reviews:feedback:{ip_hash('127.0.0.1')}")


@pytest.fixture
def published(monkeypatch):
    """The tasks published to the broker (name, args), instead of a broker."""
    tasks: list[tuple[str, list]] = []
    monkeypatch.setattr(
        celery_app, "send_task", lambda name, args=None, **_: tasks.append((name, args))
    )
    return tasks


@pytest.fixture
def leave(client, django_capture_on_commit_callbacks):
    def leave(request, text="The plumber was late.") -> None:
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(f"/r/{request.token}/feedback/", {"text": text})
        assert response.status_code == 302

    return leave


def run(tasks) -> None:
    for name, args in tasks:
        assert name == feedback_notify_owner_task.name
        feedback_notify_owner_task.apply(args=args).get()


def test_the_owner_gets_one_email_with_the_text_the_name_and_a_link(
    business, leave, published, settings
):
    request = email_request(business)
    leave(request)
    assert len(published) == 1  # queued after commit, not sent inside the request
    assert mail.outbox == []
    run(published)
    run(published)  # a task delivered twice still sends one e-mail
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == [business.email]
    assert request.contact.display_name in message.subject
    assert "The plumber was late." in message.body
    assert f"{settings.SITE_URL}/portal/requests/{request.pk}/" in message.body
    assert Feedback.objects.get().notified_at is not None


def test_text_is_sent_as_written_not_html_escaped(business, leave, published):
    leave(email_request(business), text='Tom & Jerry said "<hi>"')
    run(published)
    assert 'Tom & Jerry said "<hi>"' in mail.outbox[0].body


def test_no_email_when_turned_off(business, leave, published, settings):
    settings.FEEDBACK_NOTIFY_OWNER = False
    leave(email_request(business))
    assert published == []
    assert mail.outbox == []
    assert Feedback.objects.count() == 1


def test_a_failed_send_is_retried_and_then_sent_once(business, leave, published, monkeypatch):
    leave(email_request(business))
    real_send = EmailMessage.send
    monkeypatch.setattr(EmailMessage, "send", lambda self, **kw: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        feedback_notify_owner(feedback_id=published[0][1][0])
    assert Feedback.objects.get().notified_at is None  # the claim was released
    monkeypatch.setattr(EmailMessage, "send", real_send)
    run(published)
    assert len(mail.outbox) == 1


def test_in_development_the_email_is_a_file_in_the_outbox(business, leave, published, outbox_email):
    leave(email_request(business))
    run(published)
    notices = [
        path
        for path in outbox_email.glob("*.eml")
        if b"Subject: Private feedback from" in path.read_bytes()
    ]
    assert len(notices) == 1
    assert b"The plumber was late." in notices[0].read_bytes()


def test_no_email_when_the_business_turned_it_off(business, leave, published):
    business_settings_update(owner=business, changes={"notify_feedback": False})
    leave(email_request(business))
    run(published)
    assert mail.outbox == []
    assert Feedback.objects.get().notified_at is None
