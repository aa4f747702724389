"""The outbox: with no provider configured, every message is one file in ``OUTBOX_DIR``.

``<message id>.eml`` (the whole MIME message, exactly what an ESP would get) for e-mail and
``<message id>.json`` for SMS. Each file is written to a temporary name in the same folder,
flushed to disk and renamed into place, so a reader (a person, a test, a script forwarding the
outbox) never sees half a file, and a message that has a file was "sent".
"""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path

from django.conf import settings
from django.core.mail.backends.base import BaseEmailBackend


def outbox_dir() -> Path:
    path = Path(settings.OUTBOX_DIR)
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that ``path`` either does not exist or is complete."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def email_path(name: str) -> Path:
    return outbox_dir() / f"{name}.eml"


def sms_path(name: str) -> Path:
    return outbox_dir() / f"{name}.json"


class OutboxEmailBackend(BaseEmailBackend):
    """A Django e-mail backend that writes one ``.eml`` file per message to ``OUTBOX_DIR``.

    The file is named after ``message.outbox_name`` when the sender set it (the delivery engine
    uses its message row id), else a random id. Returns the number of messages written.
    """

    def send_messages(self, email_messages) -> int:
        written = 0
        for message in email_messages:
            try:
                name = getattr(message, "outbox_name", None) or uuid.uuid4().hex
                write_atomically(email_path(name), message.message().as_bytes())
            except Exception:
                if not self.fail_silently:
                    raise
            else:
                written += 1
        return written
