"""ASGI entry point: ``uvicorn embedadmin.asgi:application`` (the default way to serve).

Two Django handlers share one process (ADR 0006). Paths that stream with async generators (the Chat
API under ``/api/v1/public/``) go to Django's ASGI handler. Every other HTTP request goes to Django's
WSGI handler on a bounded thread pool, one thread hand-off per request (ADR 0009): Django's ASGI
handler hands each request between the event loop and threads about ten times (signals, middleware,
response close), which measured ~3 ms of CPU per request here against ~1.3 ms this way, while a
request/response endpoint gains nothing from it.
"""

import os

from django.core.asgi import get_asgi_application
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "embedadmin.settings")

django_asgi = get_asgi_application()

from django.conf import settings  # noqa: E402  (settings are configured by get_asgi_application)

from embedadmin.core.wsgi_bridge import WSGIBridge  # noqa: E402

django_wsgi = WSGIBridge(get_wsgi_application(), threads=settings.WEB_THREADS)
ASYNC_PATH_PREFIXES = ("/api/v1/public/",)


async def application(scope, receive, send):
    """Route a connection to the handler that serves it best."""
    if scope["type"] == "http" and not scope["path"].startswith(ASYNC_PATH_PREFIXES):
        return await django_wsgi(scope, receive, send)
    return await django_asgi(scope, receive, send)
