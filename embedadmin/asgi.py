"""ASGI entry point: ``uvicorn embedadmin.asgi:application`` (the default way to serve).

Every HTTP request goes to Django's WSGI handler on a bounded thread pool with one thread hand-off per
request (``embedadmin/core/wsgi_bridge.py``, ADR 0009). Responses streamed from async generators (the
Chat API's NDJSON) are sent from the event loop as they are produced. Django's own ASGI handler hands
each request between the event loop and threads about ten times (signals, middleware, response close),
which measured ~3 ms of CPU per request on the 2-core machine, while no endpoint needs an async view.

On PostgreSQL, the common generate-session request is answered on the event loop before it reaches
the bridge (``embedadmin/embedding/lane.py``, ADR 0010); everything else, and everything the lane is
not sure of, goes to Django.
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "embedadmin.settings")

django_wsgi = get_wsgi_application()

from django.conf import settings  # noqa: E402  (settings are configured by get_wsgi_application)
from django.db import close_old_connections  # noqa: E402

from embedadmin.core.wsgi_bridge import WSGIBridge  # noqa: E402

application = WSGIBridge(django_wsgi, threads=settings.WEB_THREADS, release=close_old_connections)

_database = settings.DATABASES["default"]
if settings.EMBEDADMIN["GENERATE_SESSION_LANE"] and _database["ENGINE"] == "django.db.backends.postgresql":
    from embedadmin.embedding.lane import GenerateSessionLane, lane_connection_params

    application = GenerateSessionLane(application, connection_params=lane_connection_params(_database))
