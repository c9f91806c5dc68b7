"""Cross-origin answers of the endpoints any page may call (the Core Data API): every answer carries
``Access-Control-Allow-Origin: *`` (the credential is a header, never a cookie) and a preflight is answered with the
endpoint's methods and the headers the browser asks to send (reflected, as Cube's ``cors`` middleware does; our own
list when it asks for none or sends garbage)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from django.http import HttpRequest, HttpResponse

ALLOWED_HEADERS = "Authorization, Content-Type, X-Request-Id, X-Cube-Authorization, Traceparent"
_HEADER_LIST = re.compile(r"^[A-Za-z0-9_\- ,]{1,1000}$")


def with_cors(response: HttpResponse) -> HttpResponse:
    response["Access-Control-Allow-Origin"] = "*"
    return response


def preflight(request: HttpRequest, methods: Sequence[str]) -> HttpResponse:
    """The answer to an ``OPTIONS`` preflight of an endpoint answering ``methods``."""
    response = HttpResponse(status=204)
    requested = request.headers.get("Access-Control-Request-Headers", "")
    response["Access-Control-Allow-Methods"] = ", ".join((*methods, "OPTIONS"))
    response["Access-Control-Allow-Headers"] = requested if _HEADER_LIST.match(requested) else ALLOWED_HEADERS
    response["Access-Control-Max-Age"] = "86400"
    response["Vary"] = "Access-Control-Request-Headers"
    return with_cors(response)
