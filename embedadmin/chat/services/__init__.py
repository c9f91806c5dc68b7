"""State changes of the Chat API, one module per concern: ``agents``, chat ``users`` (identity, the
non-ephemeral limit, expiry, recounts), ``runs`` (a run's life and the thread's event log) and
``streams`` (the stream-chat-state and abort requests). Callers use ``services.<name>`` from here.

Tests that patch a constant (``STALE_AFTER``) patch it in the module that defines it: these are copies.
"""

from embedadmin.chat.services.agents import agent_api_key, agent_create
from embedadmin.chat.services.runs import (
    HEARTBEAT_SECONDS,
    STALE_AFTER,
    StreamPlan,
    heartbeat_stale,
    run_claim,
    run_end,
    run_fail_if_stale,
    run_frame_append,
    run_heartbeat,
    run_start,
    runs_fail_stale,
    runs_heartbeat_queued,
)
from embedadmin.chat.services.streams import StreamRequest, chat_abort, chat_stream_open, thread_create
from embedadmin.chat.services.users import (
    ChatIdentity,
    SessionSettingsInput,
    abort_requester,
    chat_user_upsert,
    chat_users_expire,
    identity_for_request,
    user_counts_reconcile,
)

__all__ = [
    "HEARTBEAT_SECONDS",
    "STALE_AFTER",
    "ChatIdentity",
    "SessionSettingsInput",
    "StreamPlan",
    "StreamRequest",
    "abort_requester",
    "agent_api_key",
    "agent_create",
    "chat_abort",
    "chat_stream_open",
    "chat_user_upsert",
    "chat_users_expire",
    "heartbeat_stale",
    "identity_for_request",
    "run_claim",
    "run_end",
    "run_fail_if_stale",
    "run_frame_append",
    "run_heartbeat",
    "run_start",
    "runs_fail_stale",
    "runs_heartbeat_queued",
    "thread_create",
    "user_counts_reconcile",
]
