"""ASGI entry point: ``uvicorn embedadmin.asgi:application`` (the default way to serve).

Every request goes through Django, served by its WSGI handler on a bounded thread pool with one thread
hand-off per request (``embedadmin/core/wsgi_bridge.py``, ADR 0009). Responses streamed from async
generators (the Chat API's NDJSON) are sent from the event loop as they are produced.

The URLconf (every view module) is imported here, as the process loads the application, not at its first
request: gunicorn's worker accepts connections only once the application is loaded, so a worker started to
replace one that died never keeps its first requests waiting for seconds of imports while its sibling is warm.
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "embedadmin.settings")

django_wsgi = get_wsgi_application()

from django.conf import settings  # noqa: E402  (settings are configured by get_wsgi_application)
from django.db import close_old_connections  # noqa: E402
from django.urls import get_resolver  # noqa: E402

from embedadmin.core.wsgi_bridge import WSGIBridge  # noqa: E402

URL_NAMES = len(get_resolver().reverse_dict)  # imports and indexes every URL pattern's view now

application = WSGIBridge(
    django_wsgi,
    threads=settings.WEB_THREADS,
    release=close_old_connections,
    max_target_bytes=settings.LIMITS["MAX_REQUEST_LINE_BYTES"],
    max_header_bytes=settings.LIMITS["MAX_HEADER_BYTES"],
)
