"""WSGI entry point (gunicorn config.wsgi): Django, reading chunked request bodies (core.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

from core.wsgi import ChunkedRequestBody

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = ChunkedRequestBody(get_wsgi_application())
