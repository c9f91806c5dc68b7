"""A deployment's multitenancy settings, checked before they are stored (written by ``deployment_configure``).

- ``compile_context_keys``: the security-context fields whose values select a compiled model (Cube's
  ``contextToAppId``): ``["tenant"]``, or a path into a nested claim, ``["embed.embedTenant"]``.
- ``tenant_data_sources``: the security-context field whose value selects a data source (Cube's ``driverFactory``),
  and each value's data source URL. Every URL is of one kind (one SQL dialect: the model is compiled in it), and
  stored encrypted with the others, as one JSON object.

How the semantic layer applies them: ``embedadmin.semantic.serving.tenancy``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any
from urllib.parse import urlsplit

from embedadmin.core import credentials
from embedadmin.core.errors import BadRequest

FIELD_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
# Claims that differ between two tokens of one viewer: caches are keyed without them (semantic.context).
VOLATILE_CLAIMS = frozenset({"iat", "exp", "nbf", "jti"})
MAX_COMPILE_CONTEXT_KEYS = 8
MAX_TENANT_DATA_SOURCES = 1000
_SCHEME_KINDS = {"postgres": "postgresql"}


@dataclass(frozen=True)
class TenantDataSources:
    """Which security-context field selects a data source, and the URL of each of its values (none: not set)."""

    field: str = ""
    sources: dict[str, str] = dataclass_field(default_factory=dict)


def field_path_check(value: Any, where: str) -> str:
    """A security-context field: a claim name, or a dotted path into nested claims (``embed.embedTenant``)."""
    if not isinstance(value, str) or len(value) > 200 or not FIELD_PATH.match(value):
        raise BadRequest(f"{where}: a security-context field name (letters, digits, '_'; '.' into a nested claim)")
    if value.split(".")[0] in VOLATILE_CLAIMS:
        raise BadRequest(f"{where}: {value!r} differs between two tokens of one viewer and cannot select a tenant")
    return value


def compile_context_keys_check(value: Any) -> list[str]:
    """At most :data:`MAX_COMPILE_CONTEXT_KEYS` distinct field paths, none inside another."""
    if not isinstance(value, list):
        raise BadRequest("compileContextKeys: must be a list of security-context field names")
    keys = [field_path_check(item, f"compileContextKeys[{i}]") for i, item in enumerate(value)]
    if len(keys) > MAX_COMPILE_CONTEXT_KEYS:
        raise BadRequest(f"compileContextKeys: at most {MAX_COMPILE_CONTEXT_KEYS} fields")
    for index, key in enumerate(keys):
        for other in keys[:index]:
            if key == other or key.startswith(f"{other}.") or other.startswith(f"{key}."):
                raise BadRequest(f"compileContextKeys: {key!r} repeats or overlaps {other!r}")
    return keys


def tenant_data_sources_check(value: TenantDataSources, *, schemes: tuple[str, ...]) -> TenantDataSources:
    """A field and a non-empty map of values to URLs of one kind of source; or neither (not set)."""
    if not value.field and not value.sources:
        return value
    name = field_path_check(value.field, "tenantDataSources.field")
    if not value.sources:
        raise BadRequest("tenantDataSources.sources: at least one value and its data source URL")
    if len(value.sources) > MAX_TENANT_DATA_SOURCES:
        raise BadRequest(f"tenantDataSources.sources: at most {MAX_TENANT_DATA_SOURCES} data sources")
    kinds = set()
    for key, url in value.sources.items():
        where = f"tenantDataSources.sources[{key!r}]"
        if not isinstance(key, str) or not 0 < len(key) <= 200:
            raise BadRequest(f"{where}: a value of {name} (1 to 200 characters)")
        if not isinstance(url, str) or not url.startswith(schemes):
            raise BadRequest(f"{where}: a data source URL (duckdb:///path or postgresql://...)")
        if ":***@" in url:
            raise BadRequest(f"{where}: send the URL with its password, not as it is shown (***)")
        scheme = urlsplit(url).scheme.lower()
        kinds.add(_SCHEME_KINDS.get(scheme, scheme))
    if len(kinds) > 1:
        raise BadRequest(
            "tenantDataSources.sources: every data source is of one kind (the model is compiled in one SQL dialect)"
        )
    return TenantDataSources(name, dict(value.sources))


def tenant_data_sources_encrypt(value: TenantDataSources) -> str:
    if not value.field:
        return ""
    return credentials.encrypt_secret(json.dumps({"field": value.field, "sources": value.sources}, sort_keys=True))


def tenant_data_sources_decrypt(encrypted: str) -> TenantDataSources:
    if not encrypted:
        return TenantDataSources()
    stored = json.loads(credentials.decrypt_secret(encrypted))
    return TenantDataSources(stored["field"], dict(stored["sources"]))
