"""Deployments: creation, signing secrets and their rotation, their data source and model, env variables and the
tokens issued for them."""

from __future__ import annotations

import datetime
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from embedadmin.accounts.models import (
    Account,
    Deployment,
    DeploymentEnvVariable,
    DeploymentSecret,
    IssuedToken,
    PlatformToken,
)
from embedadmin.accounts.services.credentials import CREDENTIALS
from embedadmin.accounts.services.tenancy import (
    TenantDataSources,
    compile_context_keys_check,
    tenant_data_sources_check,
    tenant_data_sources_encrypt,
)
from embedadmin.accounts.services.validation import full_clean_or_400
from embedadmin.core import credentials
from embedadmin.core import data_source_kinds as kinds
from embedadmin.core.errors import BadRequest, Conflict
from embedadmin.core.rows import create_unique

# The URL schemes a deployment's data source may have: a source this server queries, or another of Cube's data source
# types, whose model compiles and is validated in its dialect while its queries are refused (core/data_source_kinds).
DATA_SOURCE_SCHEMES = tuple(sorted(f"{scheme}://" for scheme in {*kinds.QUERIED_SCHEMES, *kinds.CUBE_DB_TYPES}))
# A schema the rollups live in: a lower-case identifier every SQL dialect takes quoted or not, not PostgreSQL's own.
PRE_AGGREGATIONS_SCHEMA_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
RESERVED_SCHEMAS = ("information_schema", "public", "mysql", "sys", "performance_schema", "system", "default")
ENV_VARIABLE_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ENCRYPTED_PLACEHOLDER = "[ENCRYPTED]"
MAX_ENV_VARIABLES = 500


@transaction.atomic
def deployment_create(*, account: Account, name: str, slug: str) -> tuple[Deployment, str]:
    """Create a deployment and its first signing secret; returns the secret in clear, once."""
    deployment = Deployment(account=account, name=name, slug=slug)
    full_clean_or_400(deployment)
    create_unique(deployment, conflict=Conflict(f"Deployment slug {slug!r} is already used in this account"))
    secret, _ = deployment_secret_rotate(deployment=deployment)  # bumps CREDENTIALS: routing may now find it
    return deployment, secret


def deployment_secret_rotate(*, deployment: Deployment) -> tuple[str, DeploymentSecret]:
    """Add a new signing secret: it signs from now on, and the older active ones still verify. Returns the
    secret in clear (shown once) and its row (whose id names it afterwards)."""
    secret = secrets.token_urlsafe(48)
    row = DeploymentSecret.objects.create(deployment=deployment, encrypted_secret=credentials.encrypt_secret(secret))
    CREDENTIALS.bump()
    return secret, row


@transaction.atomic
def deployment_secrets_revoke_older(*, deployment: Deployment, keep_id: int | None = None) -> int:
    """Revoke the active signing secrets of ``deployment`` older than the one to keep (``keep_id``, by default
    the newest): tokens they signed stop verifying at once (the second step of a rotation). Secrets newer
    than the kept one stay active. Returns how many were revoked."""
    active = list(
        DeploymentSecret.objects.select_for_update()
        .filter(deployment=deployment, revoked_at__isnull=True)  # newest first: Meta.ordering
        .values_list("pk", flat=True)
    )
    if not active:
        return 0
    keep = active[0] if keep_id is None else keep_id
    if keep not in active:
        raise Conflict(f"Secret #{keep} is not an active signing secret of deployment {deployment.pk}")
    older = active[active.index(keep) + 1 :]
    CREDENTIALS.bump()
    return DeploymentSecret.objects.filter(pk__in=older).update(revoked_at=timezone.now())


def duckdb_url(path: str | os.PathLike[str]) -> str:
    """The ``duckdb://`` URL of a filesystem path, absolute or relative to the project directory."""
    return f"duckdb:///{os.fspath(path)}"


def deployment_configure(
    *,
    deployment: Deployment,
    model_dir: str | None = None,
    data_source_url: str | None = None,
    chat_token_auth: bool | None = None,
    load_partial_model: bool | None = None,
    open_to_embed_without_policy: bool | None = None,
    compile_context_keys: list[str] | None = None,
    tenant_data_sources: TenantDataSources | None = None,
    pre_aggregations_schema: str | None = None,
) -> Deployment:
    """Set a deployment's data model directory, data source URL, chat token authentication, whether cubes and
    views without an access policy are open to embed viewers (unsafe; docs/security.md), and its multitenancy: the
    security-context fields that select a compiled model and the field that selects a data source
    (:mod:`.tenancy`).

    ``None`` leaves a setting as it is. The model directory must exist; the data source URL must name a source this
    server queries (``duckdb:///path``, ``postgresql://...``...) or another of Cube's data source types, whose queries
    are refused (:data:`DATA_SOURCE_SCHEMES`), and is stored encrypted (it may hold a password).
    ``pre_aggregations_schema``: where the rollups live, ``""`` in the deployment's DuckDB store, else that schema of
    the data source (one that can hold them, ``core.data_source_kinds.holds_rollups``), checked by
    :func:`pre_aggregations_schema_check`.
    """
    updates: list[str] = []
    if model_dir is not None:
        path = Path(model_dir).expanduser().resolve()
        if not path.is_dir():
            raise BadRequest(f"model directory {model_dir!r} does not exist")
        deployment.model_dir = str(path)
        updates.append("model_dir")
    if data_source_url is not None:
        if not kinds.url_accepted(data_source_url):
            raise BadRequest(
                "data source URL must start with duckdb:/// or postgresql:// or name another source by its type: "
                + ", ".join(DATA_SOURCE_SCHEMES)
                + " (docs/data-sources.md)"
            )
        deployment.data_source_url_encrypted = credentials.encrypt_secret(data_source_url)
        updates.append("data_source_url_encrypted")
    if chat_token_auth is not None:
        deployment.chat_token_auth = chat_token_auth
        updates.append("chat_token_auth")
    if load_partial_model is not None:  # serve the cubes and views that compile, list the others (off: refuse all)
        deployment.load_partial_model = load_partial_model
        updates.append("load_partial_model")
    if open_to_embed_without_policy is not None:
        deployment.open_to_embed_without_policy = open_to_embed_without_policy
        updates.append("open_to_embed_without_policy")
    if compile_context_keys is not None:  # the security-context fields that select a compiled model ([]: none)
        deployment.compile_context_keys = compile_context_keys_check(compile_context_keys)
        updates.append("compile_context_keys")
    if tenant_data_sources is not None:  # the field that selects a data source and each value's URL (empty: none)
        checked = tenant_data_sources_check(tenant_data_sources, schemes=DATA_SOURCE_SCHEMES)
        deployment.tenant_data_source_field = checked.field
        deployment.tenant_data_sources_encrypted = tenant_data_sources_encrypt(checked)
        updates.extend(["tenant_data_source_field", "tenant_data_sources_encrypted"])
    if pre_aggregations_schema is not None:
        deployment.pre_aggregations_schema = pre_aggregations_schema_check(pre_aggregations_schema)
        updates.append("pre_aggregations_schema")
    if deployment.pre_aggregations_schema and {"pre_aggregations_schema", "data_source_url_encrypted"} & set(updates):
        stored = deployment.data_source_url_encrypted
        url = credentials.decrypt_secret(stored) if stored else ""
        if not kinds.holds_rollups(url):
            raise BadRequest(
                "preAggregationStorage: rollups live in the data source only for PostgreSQL, MySQL/MariaDB and "
                "ClickHouse (the schema is a database there), Trino, Snowflake, BigQuery (a dataset) and Databricks ("
                + ", ".join(kinds.schemes_speaking(kinds.ROLLUP_HOME_DIALECTS))
                + "); this deployment's data source keeps them in the store"
            )
        for check in _rollup_home_checks:
            problem = check(url)
            if problem:
                raise BadRequest(f"preAggregationStorage: {problem}")
    if updates:
        deployment.save(update_fields=[*updates, "updated_at"])
        CREDENTIALS.bump()
    return deployment


# Why a data source of a kind that holds rollups cannot hold them (a Trino URL naming no catalog, a warehouse's driver
# not installed): the semantic app registers its rollup writers' check when it is ready (accounts is below semantic).
_rollup_home_checks: list[Callable[[str], str | None]] = []


def rollup_home_check_register(check: Callable[[str], str | None]) -> None:
    """Have :func:`deployment_configure` ask ``check(url)`` (a problem, or None) whenever a deployment's rollups are
    set to live in its data source, or that source changes while they do: a problem is a 400 that changes nothing."""
    if check not in _rollup_home_checks:
        _rollup_home_checks.append(check)


def pre_aggregations_schema_check(value: Any) -> str:
    """A schema for the rollups (``""``: the DuckDB store): a lower-case SQL identifier, not a system schema."""
    if not isinstance(value, str):
        raise BadRequest("preAggregationStorage.schema: must be a schema name")
    if value and (not PRE_AGGREGATIONS_SCHEMA_RE.match(value) or value in RESERVED_SCHEMAS or value.startswith("pg_")):
        raise BadRequest(
            "preAggregationStorage.schema: a schema name of lower-case letters, digits and '_' (at most 63, not "
            "starting with a digit or pg_, not a system schema)"
        )
    return value


# --- deployments, their env variables and issued tokens (Platform API) ----------------------------------------


def deployment_update(*, deployment: Deployment, name: str | None = None, slug: str | None = None) -> Deployment:
    """Rename a deployment or change its slug (unique in the account, 409); ``None`` keeps a field."""
    fields = [field for field, value in (("name", name), ("slug", slug)) if value is not None]
    if not fields:
        return deployment
    with transaction.atomic():
        deployment = Deployment.objects.select_for_update().get(pk=deployment.pk)
        if name is not None:
            deployment.name = name
        if slug is not None:
            deployment.slug = slug
        full_clean_or_400(deployment)
        if (
            slug is not None
            and Deployment.objects.filter(account_id=deployment.account_id, slug=slug)
            .exclude(pk=deployment.pk)
            .exists()
        ):
            raise Conflict(f"Deployment slug {slug!r} is already used in this account")
        try:
            with transaction.atomic():
                deployment.save(update_fields=[*fields, "updated_at"])
        except IntegrityError:
            raise Conflict(f"Deployment slug {slug!r} is already used in this account") from None
        CREDENTIALS.bump()
    return deployment


def deployment_delete(*, deployment: Deployment) -> None:
    """Delete a deployment and everything that belongs to it (cascades: its signing secrets, env variables, issued
    token records, revoked tokens, workbooks, reports, folders, chat agents and their content). Its model directory
    on disk is left as it is. Tokens it signed stop verifying at once (the CREDENTIALS version)."""
    with transaction.atomic():
        Deployment.objects.filter(pk=deployment.pk).delete()
        CREDENTIALS.bump()


def env_variables_set(*, deployment: Deployment, variables: list[tuple[str, str]]) -> None:
    """Upsert a deployment's env variables by name, all or nothing; variables not named keep their values.

    Values are stored encrypted. ``[ENCRYPTED]`` (what a secret-looking value is answered as) is refused as a value:
    resending a listing must not overwrite the secret with the placeholder. New names must match
    ``^[A-Za-z_][A-Za-z0-9_]*$``; a stored name may be resent as it is."""
    seen: set[str] = set()
    with transaction.atomic():
        stored = {
            row.name: row for row in DeploymentEnvVariable.objects.select_for_update().filter(deployment=deployment)
        }
        for index, (name, value) in enumerate(variables):
            if name in seen:
                raise BadRequest(f"env_variables[{index}].name: {name!r} is given twice")
            seen.add(name)
            if name not in stored and not ENV_VARIABLE_NAME_RE.match(name):
                raise BadRequest(f"env_variables[{index}].name: must match ^[A-Za-z_][A-Za-z0-9_]*$")
            if value == ENCRYPTED_PLACEHOLDER:
                raise BadRequest(f"env_variables[{index}].value: {ENCRYPTED_PLACEHOLDER} is not a value")
        if len(set(stored) | seen) > MAX_ENV_VARIABLES:
            raise BadRequest(f"A deployment has at most {MAX_ENV_VARIABLES} env variables")
        for name, value in variables:
            encrypted = credentials.encrypt_secret(value)
            row = stored.get(name)
            if row is None:
                DeploymentEnvVariable.objects.create(deployment=deployment, name=name, encrypted_value=encrypted)
            else:
                row.encrypted_value = encrypted
                row.save(update_fields=["encrypted_value", "updated_at"])


def issued_token_record(
    *,
    deployment: Deployment,
    kind: str,
    jti: str,
    created_at: datetime.datetime,
    expires_at: datetime.datetime,
    environment: str = "",
    security_context: dict[str, Any] | None = None,
    scopes: list[str] | None = None,
    issued_by: PlatformToken | None = None,
) -> IssuedToken:
    """Record a token the Platform API issued: its ``jti``, claims and lifetime, never the token."""
    return IssuedToken.objects.create(
        deployment=deployment,
        kind=kind,
        environment=environment,
        jti=jti,
        security_context=security_context or {},
        scopes=scopes or [],
        issued_by=issued_by,
        created_at=created_at,
        expires_at=expires_at,
    )


def issued_tokens_purge(*, now: datetime.datetime | None = None) -> int:
    """Forget the records of issued tokens that have expired."""
    deleted, _ = IssuedToken.objects.filter(expires_at__lt=now or timezone.now()).delete()
    return deleted
