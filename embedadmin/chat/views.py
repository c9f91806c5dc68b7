"""HTTP edge of the Chat API: stream-chat-state and abort (spec 4.4, 4.5).

Plain Django views, so the stream can be an async generator the ASGI server sends line by line. Order
of checks: unknown account or agent is 404; then authentication, whose failures are a JSON-RPC error in
an HTTP 200 response; then the body (400). Other errors are ``{"error": ...}`` with their status,
rendered by :class:`embedadmin.core.middleware.ApiErrorMiddleware`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from rest_framework import serializers

from embedadmin.chat import selectors, services
from embedadmin.chat.authentication import ChatAuthError, ChatCredential, chat_authenticate
from embedadmin.chat.bus import bus_for_settings
from embedadmin.chat.models import Agent
from embedadmin.chat.runtime import get_runtime
from embedadmin.chat.serializers import AbortSerializer, StreamChatStateSerializer
from embedadmin.chat.streaming import plan_stream
from embedadmin.core.errors import BadRequest, flatten_validation_detail
from embedadmin.core.fields import loads_json

JSONRPC_UNAUTHORIZED = -32001

S = TypeVar("S", bound="serializers.Serializer[Any]")


def jsonrpc_error(message: str) -> JsonResponse:
    """An authentication failure, as the Chat API reports it: a JSON-RPC error object in a 200."""
    return JsonResponse({"jsonrpc": "2.0", "error": {"code": JSONRPC_UNAUTHORIZED, "message": message}, "id": None})


def _validated(serializer_class: type[S], request: HttpRequest, *, ignore: tuple[str, ...] = ()) -> S:
    try:
        body: Any = loads_json(request.body or b"null")
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("Invalid JSON body") from None
    if not isinstance(body, dict):
        raise BadRequest("The body must be a JSON object")
    for name in ignore:
        body.pop(name, None)
    serializer = serializer_class(data=body)
    if not serializer.is_valid():
        raise BadRequest("; ".join(flatten_validation_detail(serializer.errors)))
    return serializer


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


@_chat_endpoint
def stream_chat_state(request: HttpRequest, agent: Agent, credential: ChatCredential) -> HttpResponseBase:
    # With a token, sessionSettings is ignored altogether: the token's claims say who is asking.
    ignored = () if credential.via_api_key else ("sessionSettings",)
    serializer = _validated(StreamChatStateSerializer, request, ignore=ignored)
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


@_chat_endpoint
def abort(request: HttpRequest, agent: Agent, credential: ChatCredential) -> HttpResponse:
    data = _validated(AbortSerializer, request).validated_data
    session_settings = data.get("sessionSettings") or {}
    requester, account_wide = services.abort_requester(
        agent=agent,
        credential=credential,
        external_id=session_settings.get("externalId"),
        internal_id=session_settings.get("internalId"),
    )
    services.chat_abort(agent=agent, chat_id=data["chatId"], requester=requester, account_wide=account_wide)
    return HttpResponse(status=204)
