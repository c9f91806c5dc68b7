"""Credential self-inspection: lets an integrator check which account and scope a key has."""

from __future__ import annotations

from rest_framework.response import Response
from rest_framework.views import APIView

from embedadmin.accounts.authentication import ApiKeyAuthentication, ApiKeyRequest


class ApiKeyCurrentView(APIView):
    """``GET /api/v1/api-keys/current``: the calling key's account, kind and deployment scope.

    Reads nothing beyond the authentication lookup, which also makes it the baseline of the
    generate-session benchmark (an authenticated request that does no work).
    """

    authentication_classes = [ApiKeyAuthentication]

    def get(self, request: ApiKeyRequest) -> Response:
        caller = request.user
        deployment_ids = sorted(caller.key.deployments.values_list("id", flat=True)) if caller.is_scoped else None
        return Response(
            {
                "accountName": caller.account.name,
                "kind": caller.key.kind,
                "prefix": caller.key.prefix,
                "deploymentIds": deployment_ids,
            }
        )
