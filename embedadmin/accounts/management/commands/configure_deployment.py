from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from embedadmin.accounts import services
from embedadmin.accounts.management.commands._output import emit, fail
from embedadmin.accounts.models import Deployment
from embedadmin.accounts.selectors import (
    data_source_url_redacted,
    deployment_data_source_url,
    deployment_tenant_data_sources_shown,
)
from embedadmin.core.errors import ApiError


class Command(BaseCommand):
    help = (
        "Set a deployment's data model directory, data source URL, chat token authentication, whether it loads "
        "what compiles of its model, its multitenancy settings (docs/core-data-api.md) and where its rollups live "
        "(--pre-aggregations-schema, docs/pre-aggregations.md)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("deployment_id", type=int)
        parser.add_argument("--model-dir", help="directory of Cube-format YAML files (cubes/, views/)")
        parser.add_argument("--data-source", help="duckdb:///path/file.duckdb or postgresql://user:pw@host/db")
        parser.add_argument("--chat-token-auth", choices=["on", "off"], help="accept X-Service-Auth-Token for chat")
        parser.add_argument(
            "--load-what-compiles",
            choices=["on", "off"],
            help="serve the cubes and views that compile, list the others (off: any fault refuses the model)",
        )
        parser.add_argument(
            "--compile-context-keys",
            metavar="FIELD[,FIELD]",
            help="security-context fields whose values select a compiled model (Cube's contextToAppId); '' for none",
        )
        parser.add_argument(
            "--tenant-field",
            metavar="FIELD",
            help="security-context field whose value selects the data source (Cube's driverFactory); '' for none",
        )
        parser.add_argument(
            "--tenant-source",
            action="append",
            default=[],
            metavar="VALUE=URL",
            help="the data source of the tenants whose field has VALUE (repeat for each value; with --tenant-field)",
        )
        parser.add_argument(
            "--pre-aggregations-schema",
            metavar="SCHEMA",
            help="keep the rollups in this schema of the data source (a database on MySQL and ClickHouse, a dataset "
            "on BigQuery); '' for the DuckDB store",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **options) -> None:
        deployment = Deployment.objects.filter(pk=options["deployment_id"]).first()
        if deployment is None:
            raise CommandError(f"Deployment {options['deployment_id']} not found")
        token_auth = options["chat_token_auth"]
        partial = options["load_what_compiles"]
        keys = options["compile_context_keys"]
        try:
            tenant_sources = _tenant_sources(options["tenant_field"], options["tenant_source"])
            deployment = services.deployment_configure(
                deployment=deployment,
                model_dir=options["model_dir"],
                data_source_url=options["data_source"],
                chat_token_auth=None if token_auth is None else token_auth == "on",
                load_partial_model=None if partial is None else partial == "on",
                compile_context_keys=None if keys is None else [key.strip() for key in keys.split(",") if key.strip()],
                tenant_data_sources=tenant_sources,
                pre_aggregations_schema=options["pre_aggregations_schema"],
            )
        except ApiError as exc:
            raise fail(exc) from None
        emit(
            self,
            {
                "deploymentId": deployment.pk,
                "modelDir": deployment.model_dir,
                "dataSource": data_source_url_redacted(deployment_data_source_url(deployment=deployment)),
                "chatTokenAuth": deployment.chat_token_auth,
                "loadWhatCompiles": deployment.load_partial_model,
                "compileContextKeys": list(deployment.compile_context_keys),
                "tenantDataSources": deployment_tenant_data_sources_shown(deployment=deployment),
                "preAggregationStorage": (
                    {"location": "source", "schema": deployment.pre_aggregations_schema}
                    if deployment.pre_aggregations_schema
                    else {"location": "store", "schema": None}
                ),
            },
            as_json=options["json"],
        )


def _tenant_sources(field: str | None, pairs: list[str]) -> services.TenantDataSources | None:
    """``--tenant-field`` and its ``--tenant-source VALUE=URL`` pairs; None when neither is given (no change)."""
    if field is None:
        if pairs:
            raise CommandError("--tenant-source needs --tenant-field")
        return None
    sources: dict[str, str] = {}
    for pair in pairs:
        value, sep, url = pair.partition("=")
        if not sep or not value or not url:
            raise CommandError(f"--tenant-source {pair.split('=')[0]!r}: write VALUE=URL")
        if value in sources:
            raise CommandError(f"--tenant-source {value!r}: given twice")
        sources[value] = url
    return services.TenantDataSources(field=field, sources=sources)
