"""Which compiled model and which data source a caller gets: a deployment's multitenancy settings applied.

- ``compile_context_keys`` (Cube's ``contextToAppId``): the security-context fields whose values select a compiled
  model. The model is compiled once per distinct set of values, with ``COMPILE_CONTEXT.securityContext`` holding
  those fields and nothing else, so the key and the context always agree (:mod:`..modeling.registry`).
- ``tenant_data_sources`` (Cube's ``driverFactory``): the security-context field whose value names the caller's
  data source, and each value's URL.

Both fail closed: a caller whose security context lacks a field, or whose value selects no data source or cannot be
a compile key (text beyond letters, digits, ``_`` and ``-``), is refused (403) by every door, never served the model
or the data of the deployment's default or of another tenant. The administrator's doors (the panel's model status,
the report builder's field list, dashboard validation) have no security context: they read the model compiled
without a key (its ``COMPILE_CONTEXT.securityContext`` is empty) and never a tenant's data source.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from embedadmin.accounts.models import Deployment
from embedadmin.accounts.selectors import deployment_data_source_url
from embedadmin.accounts.services.tenancy import TenantDataSources, tenant_data_sources_decrypt
from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.errors import AccessDenied
from embedadmin.semantic.modeling.registry import compile_key

_MISSING = object()


@dataclass(frozen=True)
class Tenancy:
    """What a caller is served from: the security context the model is compiled for (None: no compile key), the
    data source URL ('' when none is configured), and a URL of the data source's kind (its SQL dialect compiles the
    model): the source itself, or for administrators without a default source a tenant's, never queried."""

    security_context: dict[str, Any] | None
    source_url: str
    kind_url: str


def claim(security_context: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted ``path`` of the security context, or ``_MISSING`` (absent or null)."""
    value: Any = security_context
    for part in path.split("."):
        if not isinstance(value, Mapping) or value.get(part) is None:
            return _MISSING
        value = value[part]
    return value


@functools.lru_cache(maxsize=256)
def _decrypted(encrypted: str) -> TenantDataSources:
    return tenant_data_sources_decrypt(encrypted)


def tenant_sources(deployment: Deployment) -> TenantDataSources:
    """The deployment's tenant data sources, decrypted once per stored value (a request reads the row each time)."""
    return _decrypted(deployment.tenant_data_sources_encrypted)


def caller_tenancy(*, deployment: Deployment, ctx: QueryContext | None) -> Tenancy:
    """The model and data source ``ctx`` is served (``ctx`` None: the deployment's administrators, see above)."""
    sources = tenant_sources(deployment)
    if ctx is None:
        url = deployment_data_source_url(deployment=deployment)
        return Tenancy(None, url, url or next(iter(sources.sources.values()), ""))
    security = ctx.stable_security_context
    compiled_for: dict[str, Any] | None = None
    if deployment.compile_context_keys:
        compiled_for = {}
        for path in deployment.compile_context_keys:
            value = claim(security, path)
            if value is _MISSING:
                raise AccessDenied(
                    f"Access denied: the security context has no '{path}', which selects this deployment's data model"
                )
            _nest(compiled_for, path, value)
        try:
            compile_key(compiled_for)
        except ValueError as exc:
            raise AccessDenied(f"Access denied: the security context cannot select a data model: {exc}") from None
    if not sources.field:
        url = deployment_data_source_url(deployment=deployment)
        return Tenancy(compiled_for, url, url)
    value = claim(security, sources.field)
    if value is _MISSING:
        raise AccessDenied(
            f"Access denied: the security context has no '{sources.field}', which selects this deployment's data source"
        )
    source = sources.sources.get(_source_key(value)) if isinstance(value, str | int | bool) else None
    if source is None:
        raise AccessDenied(f"Access denied: no data source is configured for this security context's '{sources.field}'")
    return Tenancy(compiled_for, source, source)


def _source_key(value: str | int | bool) -> str:
    """How a claim's value names its data source: text as it is, ``true``/``false``, a number's digits."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _nest(target: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        target = target.setdefault(part, {})
    target[last] = value
