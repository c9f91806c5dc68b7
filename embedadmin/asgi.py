"""ASGI entry point: ``uvicorn embedadmin.asgi:application`` (the default way to serve)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "embedadmin.settings")

application = get_asgi_application()
