"""ASGI entry point: ``uvicorn embedadmin.asgi:application`` (the default way to serve).

Every request goes through Django, served by its WSGI handler on a bounded thread pool with one thread
hand-off per request (``embedadmin/core/wsgi_bridge.py``, ADR 0009). Responses streamed from async
generators (the Chat API's NDJSON) are sent from the event loop as they are produced.
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "embedadmin.settings")

django_wsgi = get_wsgi_application()

from django.conf import settings  # noqa: E402  (settings are configured by get_wsgi_application)
from django.db import close_old_connections  # noqa: E402

from embedadmin.core.wsgi_bridge import WSGIBridge  # noqa: E402

application = WSGIBridge(
    django_wsgi,
    threads=settings.WEB_THREADS,
    release=close_old_connections,
    max_target_bytes=settings.LIMITS["MAX_REQUEST_LINE_BYTES"],
    max_header_bytes=settings.LIMITS["MAX_HEADER_BYTES"],
)
