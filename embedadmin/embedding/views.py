"""HTTP edge of embedding: generate-session, token exchange, revoke, session context.

The embed-tenant admin endpoints (spec 4.3) live in ``embedadmin/platform/embed_tenants.py``, which serves them
to both an admin ``Api-Key`` and a Platform API ``Bearer`` token."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from embedadmin.accounts.authentication import ApiKeyAuthentication, ApiKeyRequest, IsAdminApiKey
from embedadmin.accounts.tokens import TokenInvalid
from embedadmin.audit.edge import AuditedView
from embedadmin.core import credentials
from embedadmin.core.errors import Unauthorized
from embedadmin.dashboards.access import embed_token_verify
from embedadmin.embedding import services
from embedadmin.embedding.serializers import SessionIdSerializer, generate_session_input


class AdminApiKeyView(AuditedView):
    audit_via = "embed_api"
    """Base for endpoints that require an admin ``Api-Key``; ``request.user`` is the caller."""

    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [IsAdminApiKey]


class GenerateSessionView(AdminApiKeyView):
    audit_exempt = {"POST": "sessions are counted per day (audit.DailyUsage), not logged one by one"}

    def post(self, request: ApiKeyRequest) -> Response:
        data = generate_session_input(request.data)
        session_id = services.session_generate_for_key(caller=request.user, data=data)
        return Response({"sessionId": session_id})


class SessionTokenView(AuditedView):
    audit_via = "embed_api"
    """Unauthenticated: the sessionId itself is the credential."""
    audit_exempt = {"POST": "the embed page redeeming its own session: not an administrative change"}

    def post(self, request: Request) -> Response:
        serializer = SessionIdSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        exchanged = services.session_exchange(session_id=serializer.validated_data["sessionId"])
        # renewAt: when a page that swapped this token in place should announce it expiring (one rule, services).
        return Response(
            {
                "token": exchanged.token,
                "expiresAt": exchanged.expires_at.isoformat().replace("+00:00", "Z"),
                "renewAt": services.renew_at(exchanged.expires_at).isoformat().replace("+00:00", "Z"),
            }
        )


class SessionRevokeView(AdminApiKeyView):
    audit_resource = "embed_session"
    audit_verbs = {"POST": "revoke"}

    def post(self, request: ApiKeyRequest) -> Response:
        serializer = SessionIdSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        session_id = serializer.validated_data["sessionId"]
        services.session_revoke(caller=request.user, session_id=session_id)
        # The sessionId is a bearer secret: the entry names the session by the start of its stored digest.
        self.audit_note(sessionDigest=credentials.digest(session_id)[:16])
        return Response(status=204)


class SessionContextView(APIView):
    """What an embed token grants: ``Authorization: Bearer <embed token>``. A revoked, expired or
    forged token is 401 (verified as every embed endpoint verifies one: ``dashboards.access.embed_token_verify``);
    this is how an embed page checks its token is still good."""

    def get(self, request: Request) -> Response:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("Authorization header must be 'Bearer <embed token>'")
        try:
            caller = embed_token_verify(token=token)
        except TokenInvalid as exc:
            raise Unauthorized(str(exc)) from None
        return Response(caller.claims)
