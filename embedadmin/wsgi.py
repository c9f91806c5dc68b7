"""WSGI entry point, for servers that cannot speak ASGI (chat streaming needs ASGI)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "embedadmin.settings")

application = get_wsgi_application()
