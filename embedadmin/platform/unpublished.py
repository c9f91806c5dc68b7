"""Platform API v1 and Build API v1, the resources Cube names but whose semantics it does not publish: 501 for
any method and subpath of ``/api/v1/oauth-integrations``, ``user-oauth-tokens``, ``oidc-token-configs``,
``github``, ``deployments/{id}/dbt-sync`` and ``/build/api/v1/deployments/{id}/github/connect`` (``urls.py``)."""

from __future__ import annotations

from typing import Any

from rest_framework.response import Response

from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.platform.platform_view import PlatformView


class NotImplementedView(PlatformView):
    """501 for a resource Cube names but whose semantics it does not publish (``resource`` says which). A
    deployment-scoped one answers 404 first for a deployment that is not the caller's."""

    audit_exempt = dict.fromkeys(("POST", "PUT", "PATCH", "DELETE"), "answers 501 and changes nothing")

    resource = ""

    def _answer(self, request: PlatformRequest, *args: Any, **kwargs: Any) -> Response:
        if "deployment_id" in kwargs:
            self.deployment(request, kwargs["deployment_id"])
        message = f"{self.resource} is not implemented: its semantics are not published by Cube, so this install "
        message += "does not guess them"
        return Response({"error": message}, status=501)

    get = post = put = patch = delete = head = _answer
    options = _answer  # type: ignore[assignment]  # DRF types options() with Request; ours narrows it
