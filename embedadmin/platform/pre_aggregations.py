"""Platform API v1, a deployment's rollup pre-aggregations: ``GET /api/v1/deployments/{id}/pre-aggregations`` (every
rollup of the deployment's model with its build progress: status, partitions, rows, size, build time, last refresh,
error) and ``POST /api/v1/deployments/{id}/pre-aggregations/rebuild`` ``{preAggregationId?}`` (rebuild one rollup, or
every one, now: queued for the workers, audited as ``pre_aggregation.rebuild``).

Thin adapters over :mod:`embedadmin.semantic.serving.pre_aggregations`; another account's deployment is 404.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.core.edge.bodies import json_object_body
from embedadmin.core.edge.times import iso_time
from embedadmin.core.errors import BadRequest
from embedadmin.platform.openapi import error, many
from embedadmin.platform.platform_view import BODY_INVALID, DEPLOYMENT_NOT_FOUND, PlatformView
from embedadmin.semantic.serving.pre_aggregations import (
    PartitionStatus,
    RollupStatus,
    pre_aggregations_rebuild,
    pre_aggregations_status,
)
from embedadmin.semantic.tasks import enqueue_build, serve

MAX_ID_LENGTH = 255

PARTITION = inline_serializer(
    "PreAggregationPartition",
    {
        "partition": serializers.CharField(help_text="The partition's start (20240101, 202401, 2024...); '' for none"),
        "rangeStart": serializers.DateTimeField(allow_null=True),
        "rangeEnd": serializers.DateTimeField(allow_null=True),
        "status": serializers.CharField(help_text="pending, queued, building, built or failed"),
        "builtAt": serializers.DateTimeField(allow_null=True, help_text="When the table readers use was built"),
        "rows": serializers.IntegerField(allow_null=True),
        "bytes": serializers.IntegerField(allow_null=True),
        "buildSeconds": serializers.FloatField(allow_null=True),
        "buildingSince": serializers.DateTimeField(allow_null=True),
        "error": serializers.CharField(allow_null=True, help_text="Why the last build failed"),
    },
)
PRE_AGGREGATION = inline_serializer(
    "PreAggregation",
    {
        "id": serializers.CharField(help_text="cube.name, Cube's preAggregationId"),
        "cube": serializers.CharField(),
        "name": serializers.CharField(),
        "type": serializers.CharField(help_text="rollup"),
        "tableName": serializers.CharField(),
        "measures": serializers.ListField(child=serializers.CharField()),
        "dimensions": serializers.ListField(child=serializers.CharField()),
        "segments": serializers.ListField(child=serializers.CharField()),
        "timeDimension": serializers.CharField(allow_null=True),
        "granularity": serializers.CharField(allow_null=True),
        "partitionGranularity": serializers.CharField(allow_null=True),
        "refreshKey": serializers.DictField(help_text="every, sql, incremental, updateWindow"),
        "scheduledRefresh": serializers.BooleanField(),
        "status": serializers.CharField(
            help_text="built (queries it matches are answered from it), building, pending, failed, or unusable "
            "(problem says why it can never be built)"
        ),
        "problem": serializers.CharField(allow_null=True),
        "lastRefreshTime": serializers.DateTimeField(allow_null=True, help_text="Its oldest partition's build"),
        "partitions": many(PARTITION),
    },
)


def partition_item(partition: PartitionStatus) -> dict[str, Any]:
    return {
        "partition": partition.partition,
        "rangeStart": iso_time(partition.range_start),
        "rangeEnd": iso_time(partition.range_end),
        "status": partition.status,
        "builtAt": iso_time(partition.built_at),
        "rows": partition.rows,
        "bytes": partition.bytes,
        "buildSeconds": partition.build_seconds,
        "buildingSince": iso_time(partition.building_since),
        "error": partition.error or None,
    }


def pre_aggregation_item(status: RollupStatus) -> dict[str, Any]:
    rollup = status.rollup
    key = rollup.refresh_key
    return {
        "id": rollup.id,
        "cube": rollup.cube,
        "name": rollup.name,
        "type": rollup.type,
        "tableName": status.table,
        "measures": list(rollup.measures),
        "dimensions": list(rollup.dimensions),
        "segments": list(rollup.segments),
        "timeDimension": rollup.time_dimension,
        "granularity": rollup.granularity,
        "partitionGranularity": rollup.partition_granularity,
        "refreshKey": {
            "every": key.every,
            "sql": key.sql,
            "incremental": key.incremental,
            "updateWindow": key.update_window.text if key.update_window else None,
        },
        "scheduledRefresh": rollup.scheduled_refresh,
        "status": status.status,
        "problem": status.problem,
        "lastRefreshTime": iso_time(status.last_refresh_time),
        "partitions": [partition_item(p) for p in status.partitions],
    }


class PreAggregationListView(PlatformView):
    """``GET /api/v1/deployments/{id}/pre-aggregations``: the rollups of the model the deployment serves, in
    definition order (the order queries are matched in)."""

    @extend_schema(
        responses={
            200: inline_serializer("PreAggregationList", {"preAggregations": many(PRE_AGGREGATION)}),
            400: error("The deployment has no data model, or its model does not compile"),
            404: DEPLOYMENT_NOT_FOUND,
        }
    )
    def get(self, request: PlatformRequest, deployment_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        statuses = pre_aggregations_status(deployment=deployment, serve=serve)
        return Response({"preAggregations": [pre_aggregation_item(s) for s in statuses]})


class PreAggregationRebuildView(PlatformView):
    """``POST /api/v1/deployments/{id}/pre-aggregations/rebuild`` ``{preAggregationId?}``: every partition of the
    rollup (of every rollup without an id) rebuilt by the workers, scheduled or not; readers keep the current tables
    until each new one is swapped in. 202 ``{queued}``: how many partitions."""

    audit_resource = "pre_aggregation"
    audit_verbs = {"POST": "rebuild"}
    audit_id_kwarg = "deployment_id"

    @extend_schema(
        request=inline_serializer(
            "PreAggregationRebuild",
            {
                "preAggregationId": serializers.CharField(
                    required=False, help_text="cube.name; every rollup if left out"
                )
            },
        ),
        responses={
            202: inline_serializer("PreAggregationRebuildQueued", {"queued": serializers.IntegerField()}),
            400: error(
                f"{BODY_INVALID.description}; a deployment without a data model or data source, or a rollup that "
                "cannot be built"
            ),
            404: error("No deployment with this id in the caller's account, or no such rollup in its model"),
        },
    )
    def post(self, request: PlatformRequest, deployment_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        body = json_object_body(request, fields=("preAggregationId",))
        wanted = body.get("preAggregationId")
        if wanted is not None and (not isinstance(wanted, str) or not wanted.strip() or len(wanted) > MAX_ID_LENGTH):
            raise BadRequest(f"preAggregationId: must be a cube.name of at most {MAX_ID_LENGTH} characters")
        queued = pre_aggregations_rebuild(
            deployment=deployment, serve=serve, enqueue=enqueue_build, pre_aggregation=wanted
        )
        self.audit_note(preAggregation=wanted or "*", partitions=queued)
        return Response({"queued": queued}, status=202)
