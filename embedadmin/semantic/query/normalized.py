"""A validated, normalized Cube query: what the SQL builder compiles and what ``/v1/load`` echoes as ``query``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

DEFAULT_LIMIT = 10_000
# A limit that means every row (a rollup's build, a lambda's source part): written as no LIMIT at all, which every
# dialect reads the same way (a LIMIT of 2^63 - 1 is not accepted everywhere).
EVERY_ROW = 2**63 - 1
MAX_LIMIT = 50_000


@dataclass(frozen=True, slots=True)
class FilterCondition:
    """``{member, operator, values}`` with values stringified (None kept) and relative dates resolved."""

    member: str
    operator: str
    values: tuple[str | None, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"member": self.member, "operator": self.operator}
        if self.values is not None:
            body["values"] = list(self.values)
        return body


@dataclass(frozen=True, slots=True)
class FilterGroup:
    kind: Literal["and", "or"]
    items: tuple[FilterNode, ...]

    def to_json(self) -> dict[str, Any]:
        return {self.kind: [item.to_json() for item in self.items]}


@dataclass(frozen=True, slots=True)
class Contradiction:
    """A condition no row meets (``1 = 0``): how a denied access policy reaches the SQL."""

    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"contradiction": self.reason}


FilterNode = FilterCondition | FilterGroup | Contradiction


@dataclass(frozen=True, slots=True)
class TimeDimensionSpec:
    dimension: str
    granularity: str | None = None
    date_range: tuple[str, str] | None = None  # local times in the query time zone, YYYY-MM-DDTHH:mm:ss.SSS
    compare_date_range: tuple[tuple[str, str], ...] | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"dimension": self.dimension}
        if self.granularity is not None:
            body["granularity"] = self.granularity
        if self.date_range is not None:
            body["dateRange"] = list(self.date_range)
        if self.compare_date_range is not None:
            body["compareDateRange"] = [list(r) for r in self.compare_date_range]
        return body

    @property
    def key(self) -> str | None:
        """``Cube.td.granularity``: the row key of its values (None when it only filters)."""
        return f"{self.dimension}.{self.granularity}" if self.granularity else None


@dataclass(frozen=True, slots=True)
class OrderSpec:
    id: str
    desc: bool


@dataclass(frozen=True, slots=True)
class NormalizedQuery:
    """One query after validation. ``order`` is the effective order (the default rule applied)."""

    measures: tuple[str, ...] = ()
    dimensions: tuple[str, ...] = ()
    segments: tuple[str, ...] = ()
    time_dimensions: tuple[TimeDimensionSpec, ...] = ()
    filters: tuple[FilterNode, ...] = ()
    order: tuple[OrderSpec, ...] = ()
    limit: int = DEFAULT_LIMIT
    offset: int | None = None
    total: bool | None = None
    timezone: str = "UTC"
    ungrouped: bool | None = None
    response_format: str | None = None
    join_hints: tuple[tuple[str, ...], ...] = ()
    given: frozenset[str] = field(default_factory=frozenset)  # query keys the caller sent

    @property
    def row_limit(self) -> int:
        return self.limit

    def to_json(self) -> dict[str, Any]:
        """Cube's echo of the normalized query (``query`` in the ``/v1/load`` response)."""
        body: dict[str, Any] = {
            "measures": list(self.measures),
            "dimensions": list(self.dimensions),
            "timeDimensions": [td.to_json() for td in self.time_dimensions],
        }
        if "segments" in self.given:
            body["segments"] = list(self.segments)
        body["filters"] = [f.to_json() for f in self.filters]
        body["limit"] = self.limit
        body["rowLimit"] = self.limit
        if self.offset is not None:
            body["offset"] = self.offset
        if self.total is not None:
            body["total"] = self.total
        body["timezone"] = self.timezone
        if "order" in self.given:
            body["order"] = [{"id": o.id, "desc": o.desc} for o in self.order]
        if self.ungrouped is not None:
            body["ungrouped"] = self.ungrouped
        if self.response_format is not None:
            body["responseFormat"] = self.response_format
        return body

    def order_json(self) -> dict[str, str]:
        """``{"orders.count": "desc"}``: the order as ``/v1/sql`` and ``/v1/dry-run`` show it."""
        return {o.id: "desc" if o.desc else "asc" for o in self.order}
