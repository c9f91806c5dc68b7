"""The pre-aggregation pointers and build leases: one row per partition of a deployment's rollup.

A partition's rows live in a DuckDB file of its own under ``PRE_AGGREGATIONS["DIR"]/<deployment>/`` (written once by
a build, never changed: :mod:`embedadmin.semantic.serving.rollup_store`), or, when the deployment keeps its rollups in
its data source, in a table of their own in that schema (:mod:`embedadmin.semantic.serving.rollup_source`). ``table``
names the file or table readers use now; a build writes a new one and swaps ``table`` in one UPDATE, so no reader
ever sees a half-built table. The build holds a lease (``lease_owner``, ``lease_heartbeat_at`` on the database's
clock): one build at a time per partition across workers, and a build whose worker died is taken over once its
heartbeat is stale.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from embedadmin.accounts.models import Deployment


class PreAggregationPartition(models.Model):
    """One partition (the whole table when the rollup is not partitioned) of one rollup of a deployment's model.

    ``structure`` is a digest of the rollup's build statement and data source: a model change that alters the rollup
    makes new rows, and rows of other structures are never read (they are removed, with their files, later).
    ``range_start``/``range_end`` bound a partition's time dimension (UTC). ``refresh_key_value`` is what the
    rollup's ``refresh_key.sql`` answered when it was built.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        QUEUED = "queued"
        BUILDING = "building"
        BUILT = "built"
        FAILED = "failed"

    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="pre_aggregation_partitions")
    pre_aggregation = models.CharField(max_length=255)  # cube.name
    structure = models.CharField(max_length=64)
    partition = models.CharField(max_length=32, blank=True, default="")  # 20240101, or "" for the whole table
    range_start = models.DateTimeField(null=True, blank=True)
    range_end = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # The table readers use (a file of the store, or a table of ``schema`` in the data source), "" until the first
    # build swaps one in.
    table = models.CharField(max_length=255, blank=True, default="")
    # "" for the DuckDB store; else the data source's schema that holds ``table`` (and ``building_table``).
    schema = models.CharField(max_length=63, blank=True, default="")
    # The table the lease holder is writing in the data source, named before it is created: a build that dies
    # leaves it to the one taking its lease over (dropped) or to the garbage collection.
    building_table = models.CharField(max_length=63, blank=True, default="")
    built_at = models.DateTimeField(null=True, blank=True)
    rows = models.BigIntegerField(null=True, blank=True)
    bytes = models.BigIntegerField(null=True, blank=True)
    build_seconds = models.FloatField(null=True, blank=True)
    # The end of the rows the built table holds (UTC), when a rollup_lambda reads it: its build stops at the build
    # range's end, so the lambda knows where the source's rows start. Null: the whole partition.
    built_until = models.DateTimeField(null=True, blank=True)
    refresh_key_value = models.CharField(max_length=255, blank=True, default="")
    refresh_checked_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    queued_at = models.DateTimeField(null=True, blank=True)
    rebuild_requested_at = models.DateTimeField(null=True, blank=True)
    # The build lease.
    lease_owner = models.CharField(max_length=200, blank=True, default="")
    lease_heartbeat_at = models.DateTimeField(null=True, blank=True)
    build_started_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["deployment_id", "pre_aggregation", "partition", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["deployment", "pre_aggregation", "structure", "partition"],
                name="pre_aggregation_partition_unique",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "queued", "building", "built", "failed"]),
                name="pre_aggregation_partition_status_valid",
            ),
        ]
        indexes = [models.Index(fields=["deployment", "pre_aggregation"], name="pre_agg_partition_rollup")]

    def __str__(self) -> str:
        suffix = f" {self.partition}" if self.partition else ""
        return f"{self.pre_aggregation}{suffix} ({self.status})"
