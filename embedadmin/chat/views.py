"""HTTP edge of the Chat API: stream-chat-state and abort (spec 4.4, 4.5).

Plain Django views, so the stream can be an async generator the ASGI server sends line by line. Order
of checks: unknown account or agent is 404; then authentication, whose failures are a JSON-RPC error in
an HTTP 200 response; then the body (400). Other errors are ``{"error": ...}`` with their status,
rendered by :class:`embedadmin.core.middleware.ApiErrorMiddleware`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from embedadmin.chat import selectors, services
from embedadmin.chat.authentication import ChatAuthError, ChatCredential, chat_authenticate
from embedadmin.chat.bus import bus_for_settings
from embedadmin.chat.models import Agent
from embedadmin.chat.runtime import get_runtime
from embedadmin.chat.serializers import AbortSerializer, StreamChatStateSerializer
from embedadmin.chat.streaming import plan_stream
from embedadmin.core.edge.bodies import validated
from embedadmin.core.edge.declarations import declare
from embedadmin.core.edge.openapi import error_responses, json_content

JSONRPC_UNAUTHORIZED = -32001


def jsonrpc_error(message: str) -> JsonResponse:
    """An authentication failure, as the Chat API reports it: a JSON-RPC error object in a 200."""
    return JsonResponse({"jsonrpc": "2.0", "error": {"code": JSONRPC_UNAUTHORIZED, "message": message}, "id": None})


# --- what the views declare: their OpenAPI operations (GET /api/v1/spec) and audit ----------------------------

_SECURITY: list[dict[str, list[str]]] = [{"ApiKey": []}, {"ChatServiceToken": []}, {"EmbedToken": []}]
_CHAT_BODY = {
    "type": "object",
    "description": "See docs/chat-api.md: chatId, messages, sessionSettings, dashboard context.",
    "additionalProperties": True,
}
_JSONRPC_ERROR = {
    "type": "object",
    "properties": {"jsonrpc": {"type": "string"}, "error": {"type": "object"}},
    "required": ["error"],
}
_ABORT_BODY = {  # chat/serializers.py AbortSerializer (unknown fields are 400)
    "type": "object",
    "properties": {
        "chatId": {"type": "string", "minLength": 1, "maxLength": 64},
        "sessionSettings": {
            "type": "object",
            "description": "Whose chat, with an API key: externalId or internalId",
            "properties": {
                "externalId": {"type": "string", "maxLength": 255},
                "internalId": {"type": "string", "maxLength": 254},
            },
            "additionalProperties": False,
        },
    },
    "required": ["chatId"],
    "additionalProperties": False,
}
STREAM_CHAT_STATE = {
    "POST": {
        "tags": ["Chat API"],
        "summary": "Ask the agent; the answer streams as JSON lines",
        "security": _SECURITY,
        "requestBody": {"required": True, "content": json_content(_CHAT_BODY)},
        "responses": {
            "200": {
                "description": "The chat state as a stream of JSON lines, or a JSON-RPC error object (authentication)",
                "content": {"application/json": {"schema": {}}},
            },
            **error_responses(),
        },
    }
}
ABORT = {
    "POST": {
        "tags": ["Chat API"],
        "summary": "Abort the running answer of a chat",
        "security": _SECURITY,
        "requestBody": {"required": True, "content": json_content(_ABORT_BODY)},
        "responses": {
            "204": {"description": "Aborted"},
            "200": {"description": "A JSON-RPC error object (authentication)", "content": json_content(_JSONRPC_ERROR)},
            **error_responses(),
        },
    }
}
# Why the Chat API's writes record no audit entry: the audit log records changes to an account's configuration;
# a chat is a viewer's conversation, kept whole in its thread's event log.
MESSAGES_ARE_COUNTED = (
    "a viewer's question: kept in its thread's event log and counted per day (audit.DailyUsage), not logged one by one"
)
ABORTS_ARE_RECORDED = "a viewer stopping an answer: recorded on the run (aborted) and in its thread's event log"


# --- the views -------------------------------------------------------------------------------------------------


def _chat_endpoint(
    view: Callable[[HttpRequest, Agent, ChatCredential], HttpResponseBase],
) -> Callable[..., HttpResponseBase]:
    """A Chat API endpoint: POST only, no CSRF check (callers authenticate by header). The agent is looked up
    (404), then the caller authenticated (a failure is a JSON-RPC error); ``view`` gets both."""

    @csrf_exempt
    @require_POST
    @functools.wraps(view)
    def endpoint(request: HttpRequest, account_name: str, agent_id: str) -> HttpResponseBase:
        agent = selectors.agent_get(account_name=account_name, agent_id=agent_id)
        try:
            credential = chat_authenticate(agent=agent, headers=request.headers)
        except ChatAuthError as exc:
            return jsonrpc_error(str(exc))
        return view(request, agent, credential)

    return endpoint


@declare(operations=STREAM_CHAT_STATE, audit_exempt={"POST": MESSAGES_ARE_COUNTED})
@_chat_endpoint
def stream_chat_state(request: HttpRequest, agent: Agent, credential: ChatCredential) -> HttpResponseBase:
    # With a token, sessionSettings is ignored altogether: the token's claims say who is asking.
    ignored = () if credential.via_api_key else ("sessionSettings",)
    serializer = validated(StreamChatStateSerializer, request, ignore=ignored)
    identity = services.identity_for_request(
        agent=agent, credential=credential, session_settings=serializer.session_settings()
    )
    user = services.chat_user_upsert(account=agent.account, identity=identity)
    bus = bus_for_settings()
    plan = services.chat_stream_open(
        agent=agent, user=user, request=serializer.stream_request(), runtime=get_runtime(), bus=bus
    )
    # Django returns a request's connection at request_finished, which for a stream is its end: give it
    # back now (the stream reads the log from threads of its own), or every open stream pins one.
    connection.close()
    response = StreamingHttpResponse(plan_stream(plan, bus=bus), content_type="application/json")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # proxies must pass lines through as they come
    return response


@declare(operations=ABORT, audit_exempt={"POST": ABORTS_ARE_RECORDED})
@_chat_endpoint
def abort(request: HttpRequest, agent: Agent, credential: ChatCredential) -> HttpResponse:
    data = validated(AbortSerializer, request).validated_data
    session_settings = data.get("sessionSettings") or {}
    requester, account_wide = services.abort_requester(
        agent=agent,
        credential=credential,
        external_id=session_settings.get("externalId"),
        internal_id=session_settings.get("internalId"),
    )
    services.chat_abort(agent=agent, chat_id=data["chatId"], requester=requester, account_wide=account_wide)
    return HttpResponse(status=204)
