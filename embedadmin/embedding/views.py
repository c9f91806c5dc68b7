"""HTTP edge of embedding: generate-session, token exchange, revoke, session context.

The embed-tenant admin endpoints (spec 4.3) live in ``embedadmin/platform/embed_tenants.py``, which serves them
to both an admin ``Api-Key`` and a Platform API ``Bearer`` token."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from embedadmin.accounts.authentication import ApiKeyAuthentication, ApiKeyRequest, IsAdminApiKey
from embedadmin.accounts.tokens import TokenInvalid
from embedadmin.audit.audited_views import AuditedView
from embedadmin.core import credentials
from embedadmin.core.edge.authorization import EMBED_BEARER
from embedadmin.core.edge.times import iso_time
from embedadmin.core.errors import Unauthorized
from embedadmin.embedding import services
from embedadmin.embedding.serializers import GenerateSessionSerializer, SessionIdSerializer, generate_session_input
from embedadmin.embedding.tokens import embed_caller

# The OpenAPI description (GET /api/v1/spec): an error answer is the shared {"error"} body, which the spec's
# postprocessing hook gives every error an operation declares (embedadmin/platform/openapi.py).
_INVALID = OpenApiResponse(description="Invalid input: a field of the body (the message names it)")
SESSION_ID = inline_serializer(
    "SessionId", {"sessionId": serializers.CharField(help_text="Single use, valid for a few minutes")}
)
EMBED_TOKEN = inline_serializer(
    "SessionToken",
    {
        "token": serializers.CharField(help_text="The embed token: Authorization: Embed-Token <token>"),
        "expiresAt": serializers.DateTimeField(),
        "renewAt": serializers.DateTimeField(help_text="When a page should mint a new session and swap the token"),
    },
)


class AdminApiKeyView(AuditedView):
    """Base for endpoints that require an admin ``Api-Key``; ``request.user`` is the caller."""

    audit_via = "embed_api"

    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [IsAdminApiKey]


class GenerateSessionView(AdminApiKeyView):
    audit_exempt = {"POST": "sessions are counted per day (audit.DailyUsage), not logged one by one"}

    @extend_schema(
        request=GenerateSessionSerializer,
        responses={
            200: SESSION_ID,
            400: _INVALID,
            403: OpenApiResponse(
                description="A personal key, a key not allowed on the deployment, creatorMode without useCreatorMode"
                ", or a deployment without an active signing secret"
            ),
            404: OpenApiResponse(description="No deployment with this id in the key's account"),
            429: OpenApiResponse(description="The account's external-user cap is reached"),
        },
    )
    def post(self, request: ApiKeyRequest) -> Response:
        data = generate_session_input(request.data)
        session_id = services.session_generate_for_key(caller=request.user, data=data)
        return Response({"sessionId": session_id})


class SessionTokenView(AuditedView):
    """Unauthenticated: the sessionId itself is the credential."""

    audit_via = "embed_api"
    audit_exempt = {"POST": "the embed page redeeming its own session: not an administrative change"}

    @extend_schema(
        request=SessionIdSerializer,
        responses={
            200: EMBED_TOKEN,
            400: _INVALID,
            401: OpenApiResponse(description="The session is invalid, expired, revoked or already used"),
        },
        auth=[],
    )
    def post(self, request: Request) -> Response:
        serializer = SessionIdSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        exchanged = services.session_exchange(session_id=serializer.validated_data["sessionId"])
        # renewAt: when a page that swapped this token in place should announce it expiring (one rule, services).
        return Response(
            {
                "token": exchanged.token,
                "expiresAt": iso_time(exchanged.expires_at),
                "renewAt": iso_time(services.renew_at(exchanged.expires_at)),
            }
        )


class SessionRevokeView(AdminApiKeyView):
    audit_resource = "embed_session"
    audit_verbs = {"POST": "revoke"}

    @extend_schema(
        request=SessionIdSerializer,
        responses={
            204: OpenApiResponse(description="Revoked; also for a session unknown or of another account"),
            400: _INVALID,
        },
    )
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
    forged token is 401 (verified as every embed endpoint verifies one: ``embedding.tokens.embed_token_verify``);
    this is how an embed page checks its token is still good."""

    @extend_schema(
        responses={
            200: OpenApiResponse(
                {"type": "object", "additionalProperties": True},
                description="The token's claims: sub, the embed claim (groups, attributes, settings), exp...",
            ),
            401: OpenApiResponse(description="No Bearer embed token, or one revoked, expired or forged"),
        },
        auth=[{"EmbedBearer": []}],  # type: ignore[list-item]  # security requirements; typed as names
    )
    def get(self, request: Request) -> Response:
        try:
            caller = embed_caller(request.headers.get("Authorization"), scheme=EMBED_BEARER)
        except TokenInvalid as exc:
            raise Unauthorized(str(exc)) from None
        return Response(caller.claims)
