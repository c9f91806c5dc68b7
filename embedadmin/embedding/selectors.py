"""Reads of embed sessions. Every function takes the account, or an object of it, it reads within."""

from __future__ import annotations

import uuid
from typing import Any

from embedadmin.accounts.models import Deployment
from embedadmin.embedding.models import EmbedSession


def embed_token_session(*, deployment: Deployment, payload: dict[str, Any]) -> EmbedSession | None:
    """The session of ``deployment`` a verified embed token was minted from, if it is one."""
    jti = payload.get("jti")
    if not isinstance(payload.get("embed"), dict) or not isinstance(jti, str):
        return None
    try:
        public_id = uuid.UUID(jti)
    except ValueError:  # another issuer's jti: the token is valid for the deployment but no session's
        return None
    return EmbedSession.objects.filter(public_id=public_id, deployment=deployment).first()
