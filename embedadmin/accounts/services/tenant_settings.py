"""Tenant settings and the rules of embed settings' values, shared by tenant settings and generate-session."""

from __future__ import annotations

import functools
import re
import zoneinfo
from collections.abc import Callable
from typing import Any

from django.db import transaction

from embedadmin.accounts.models import (
    Account,
    TenantSettings,
)
from embedadmin.accounts.services.credentials import CREDENTIALS
from embedadmin.core.errors import BadRequest

# A BCP-47 language tag as browsers take it: language, optional script, region and variants ("en-US", "zh-Hant-TW").
_LOCALE_RE = re.compile(
    r"^[A-Za-z]{2,3}(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?(-([A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*$"
)
_ORIGIN_RE = re.compile(
    r"^(https?)://([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*)(:[0-9]{1,5})?$"
)
_COLOR_RE = re.compile(r"^#([0-9a-fA-F]{3}|[0-9a-fA-F]{4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$")
# A CSS font-family list: names, quotes, commas and spaces; nothing that could end the declaration.
_FONT_RE = re.compile(r"^[A-Za-z0-9 ,'\"._-]{1,200}$")
MAX_ALLOWED_ORIGINS = 50

# EmbedTheme (reference 1.8): each key is a color, a font, or a nested object of the same.
_THEME_SHAPE: dict[str, Any] = {
    "primaryColor": "color",
    "font": "font",
    "analyticsChat": {"backgroundColor": "color", "chatInput": {"backgroundColor": "color", "borderColor": "color"}},
    "chat": {"inputColor": "color"},
}


def locale_check(value: Any, *, name: str = "locale") -> str:
    """``value`` if it is a BCP-47 language tag (``en-US``), else :class:`BadRequest`."""
    if not isinstance(value, str) or len(value) > 35 or not _LOCALE_RE.match(value):
        raise BadRequest(f"{name}: must be a BCP-47 language tag such as en-US")
    return value


@functools.cache
def _iana_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def timezone_check(value: Any, *, name: str = "timezone") -> str:
    """``value`` if it is an IANA time zone name (``Europe/Paris``, ``UTC``), else :class:`BadRequest`."""
    if not isinstance(value, str) or value not in _iana_zones():
        raise BadRequest(f"{name}: must be an IANA time zone name such as Europe/Paris")
    return value


def origin_check(value: Any, *, name: str = "origin") -> str:
    """``value`` lowercased if it is an origin ``scheme://host[:port]`` (http or https, no path), else 400."""
    if isinstance(value, str):
        origin = value.strip().lower()
        match = _ORIGIN_RE.match(origin)
        if match and len(origin) <= 300 and (not match.group(6) or 0 < int(match.group(6)[1:]) <= 65535):
            return origin
    raise BadRequest(f"{name}: must be an origin scheme://host[:port] (http or https, no path), got {value!r}")


def origins_check(value: Any, *, name: str = "embedAllowedOrigins") -> list[str]:
    """A list of distinct origins (each by :func:`origin_check`), in the order given."""
    if not isinstance(value, list) or len(value) > MAX_ALLOWED_ORIGINS:
        raise BadRequest(f"{name}: must be a list of at most {MAX_ALLOWED_ORIGINS} origins")
    origins: list[str] = []
    for index, item in enumerate(value):
        origin = origin_check(item, name=f"{name}[{index}]")
        if origin not in origins:
            origins.append(origin)
    return origins


def embed_theme_check(value: Any, *, name: str = "embedTheme") -> dict[str, Any]:
    """``value`` if it is an EmbedTheme: known keys only, colors ``#hex``, a plain font list; else 400."""
    return _theme_part(value, _THEME_SHAPE, name)


def _theme_part(value: Any, shape: dict[str, Any], name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadRequest(f"{name}: must be an object")
    unknown = sorted(set(value) - set(shape))
    if unknown:
        raise BadRequest(f"{name}: unknown keys: {', '.join(map(str, unknown))}")
    checked: dict[str, Any] = {}
    for key, item in value.items():
        kind = shape[key]
        if isinstance(kind, dict):
            checked[key] = _theme_part(item, kind, f"{name}.{key}")
        elif kind == "color" and not (isinstance(item, str) and _COLOR_RE.match(item)):
            raise BadRequest(f"{name}.{key}: must be a color #rgb or #rrggbb")
        elif kind == "font" and not (isinstance(item, str) and _FONT_RE.match(item)):
            raise BadRequest(f"{name}.{key}: must be a font family list (letters, digits, spaces, quotes, commas)")
        else:
            checked[key] = item
    return checked


def _flag_check(value: Any, *, name: str) -> bool:
    if not isinstance(value, bool):
        raise BadRequest(f"{name}: must be a boolean")
    return value


def _count_check(value: Any, *, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > 2**31 - 1:
        raise BadRequest(f"{name}: must be a non-negative integer")
    return value


# API name -> (TenantSettings field, the check that returns the value to store or raises BadRequest).
TENANT_SETTING_FIELDS: dict[str, tuple[str, Callable[..., Any]]] = {
    "useCreatorMode": ("use_creator_mode", _flag_check),
    "showDashboardChat": ("show_dashboard_chat", _flag_check),
    "allowAi": ("allow_ai", _flag_check),
    "allowExport": ("allow_export", _flag_check),
    "locale": ("embed_locale", locale_check),
    "timezone": ("embed_timezone", timezone_check),
    "restrictDataDownload": ("restrict_data_download", _flag_check),
    "embedAllowedOrigins": ("embed_allowed_origins", origins_check),
    "embedTheme": ("embed_theme", embed_theme_check),
    "maxExternalUsers": ("max_external_users", _count_check),
    "maxNonEphemeralChatUsers": ("max_non_ephemeral_chat_users", _count_check),
}


def tenant_settings_update(*, account: Account, changes: dict[str, Any]) -> TenantSettings:
    """Apply a flat set of setting changes (API names), all or nothing."""
    unknown = sorted(set(changes) - set(TENANT_SETTING_FIELDS))
    if unknown:
        raise BadRequest(f"Unknown settings: {', '.join(unknown)}")
    updates = {}
    for api_name, value in changes.items():
        field, check = TENANT_SETTING_FIELDS[api_name]
        updates[field] = check(value, name=api_name)
    with transaction.atomic():
        settings_row = TenantSettings.objects.select_for_update().get(account=account)
        for field, value in updates.items():
            setattr(settings_row, field, value)
        if updates:
            settings_row.save(update_fields=list(updates))
            CREDENTIALS.bump()  # an API key's caller carries its account's settings
    return settings_row
