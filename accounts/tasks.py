"""Celery tasks of the accounts app: thin adapters over ``accounts.services``."""

from __future__ import annotations

from celery import shared_task

from . import services


@shared_task(name="accounts.tasks.send_password_reset_email", acks_late=True)
def send_password_reset_email(email: str) -> None:
    """Thin adapter; the rules live in services.password_reset_email_send. A redelivery may
    send a second e-mail, whose link works as well as the first."""
    services.password_reset_email_send(email=email)


@shared_task(name="accounts.tasks.send_invitation_email", acks_late=True)
def send_invitation_email(invitation_id: str) -> None:
    """Thin adapter; the rules live in services.invitation_email_send. A redelivery may send
    the e-mail twice, with the same link."""
    services.invitation_email_send(invitation_id=invitation_id)
