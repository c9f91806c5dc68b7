"""ASGI entry point: ``uvicorn embedadmin.asgi:application`` (the default way to serve).

Django's WSGI handler serves HTTP on a bounded thread pool with one thread hand-off per request
(``embedadmin/core/wsgi_bridge.py``, ADR 0009). Responses streamed from async generators (the Chat API's
NDJSON) are sent from the event loop as they are produced. Django's own ASGI handler hands each request
between the event loop and threads about ten times (signals, middleware, response close), which measured
~3 ms of CPU per request on the 2-core machine, while no endpoint needs an async view.

On PostgreSQL, two lanes answer some requests before they reach the bridge: the common generate-session,
on the event loop (``embedadmin/embedding/lane.py``, ADR 0010), and, without ``REDIS_URL``, ``/v1/load``:
repeated answers on the event loop, others by the view's own steps, with the query awaited on the result
cache's runner (``embedadmin/semantic/lane.py``, ADR 0011). Everything else, and everything a lane is not sure of,
goes to Django.
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "embedadmin.settings")

django_wsgi = get_wsgi_application()

from django.conf import settings  # noqa: E402  (settings are configured by get_wsgi_application)
from django.db import close_old_connections  # noqa: E402

from embedadmin.core.wsgi_bridge import WSGIBridge  # noqa: E402

application = WSGIBridge(django_wsgi, threads=settings.WEB_THREADS, release=close_old_connections)

if settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    from embedadmin.core.lanes import LanePool, connection_params
    from embedadmin.embedding.lane import GenerateSessionLane
    from embedadmin.semantic import lane as load_lane

    _pool = LanePool(connection_params(settings.DATABASES["default"]))
    if settings.EMBEDADMIN["GENERATE_SESSION_LANE"]:
        application = GenerateSessionLane(application, pool=_pool)
    if settings.SEMANTIC["LOAD_LANE"] and load_lane.installable():
        application = load_lane.LoadLane(
            application,
            pool=_pool,
            base_path=settings.CUBEJS_BASE_PATH,
            default_deployment_id=settings.SEMANTIC["DEFAULT_DEPLOYMENT_ID"],
        )
