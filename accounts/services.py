"""Account workflows: password reset by e-mail.

The reset page hands the typed address to a worker (``tasks.send_password_reset_email``) and
answers at once, whatever the address; the worker runs ``password_reset_email_send``.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth.forms import PasswordResetForm
from django.contrib.auth.tokens import default_token_generator
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

logger = logging.getLogger(__name__)


def password_reset_email_send(*, email: str) -> int:
    """Send a reset link to every active owner with a usable password whose address is
    ``email`` (compared case-insensitively; the mail goes to the stored address, never to what
    was typed). Returns how many were sent: 0 for an unknown address.

    The link (``SITE_URL/accounts/reset/<uid>/<token>/``) works once, for
    ``PASSWORD_RESET_TIMEOUT`` seconds, and stops working after the next login.
    """
    form = PasswordResetForm()
    sent = 0
    for user in form.get_users(email):
        context = {
            "user": user,
            "email": user.email,
            "business_name": user.business_name,
            "site_url": settings.SITE_URL,
            "uid": urlsafe_base64_encode(force_bytes(user.pk)),
            "token": default_token_generator.make_token(user),
            "valid_minutes": settings.PASSWORD_RESET_TIMEOUT // 60,
        }
        form.send_mail(
            "registration/password_reset_subject.txt",
            "registration/password_reset_email.txt",
            context,
            from_email=None,  # DEFAULT_FROM_EMAIL
            to_email=user.email,
        )
        sent += 1
    logger.info("password reset e-mail processed", extra={"sent": sent})
    return sent
