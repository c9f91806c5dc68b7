"""The Core Data API's answers from a plan and what its queries returned: ``/v1/load`` (regular or the multi
envelope), ``/v1/sql`` and ``/v1/dry-run``."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from embedadmin.semantic.errors import QueryError
from embedadmin.semantic.modeling.model import CompiledModel
from embedadmin.semantic.results.shaping import result_body
from embedadmin.semantic.sql.builder import CompiledQuery
from embedadmin.semantic.sql.planning import BLENDING, COMPARE_DATE_RANGE, REGULAR, LoadPlan, QueryOutcome


def load_response(
    model: CompiledModel,
    plan: LoadPlan,
    outcomes: Sequence[QueryOutcome],
    *,
    multi: bool,
    db_type: str | None = None,
    data_source: str = "default",
) -> dict[str, Any]:
    """The ``/v1/load`` body: the regular object, or (``queryType=multi``) the multi envelope."""
    if not multi and plan.query_type != REGULAR:
        raise QueryError(f"'{plan.query_type}' query type is not supported by the client.Please update the client.")
    results = []
    for compiled, outcome in zip(plan.queries, outcomes, strict=True):
        results.append(
            result_body(
                model,
                compiled,
                outcome.rows,
                total=outcome.total,
                last_refresh_time=outcome.last_refresh_time,
                db_type=db_type,
                data_source=data_source,
                slow_query=outcome.slow_query,
                extra_row_values=_extra_row_values(plan.query_type, compiled),
            )
        )
        used = compiled.hints.get("preAggregation")
        if used is not None:
            results[-1] = _with_used_pre_aggregation(results[-1], used)
    if plan.query_type == BLENDING:
        _add_blending_time(plan, results)
    if not multi:
        return results[0]
    return {
        "queryType": plan.query_type,
        "results": results,
        "pivotQuery": pivot_query(plan),
        "slowQuery": any(o.slow_query for o in outcomes),
    }


def used_pre_aggregations(used: dict[str, Any]) -> dict[str, Any]:
    """Cube's ``usedPreAggregations`` for a query a rollup answered (its ``preAggregation`` hint): table -> id, type,
    last refresh (ms since the epoch)."""
    # A lambda is said as Cube says it: one entry per rollup it read (``parts``), each naming the lambda.
    return {
        part["table"]: {
            "targetTableName": part["targetTableName"],
            "preAggregationId": part["preAggregationId"],
            "lastUpdatedAt": round(part["lastUpdatedAt"].timestamp() * 1000),
            "type": part["type"],
            **({"rollupLambdaId": part["rollupLambdaId"]} if "rollupLambdaId" in part else {}),
        }
        for part in used.get("parts", [used])
    }


def _with_used_pre_aggregation(result: dict[str, Any], used: dict[str, Any]) -> dict[str, Any]:
    """``result`` with ``usedPreAggregations`` after ``lastRefreshTime``."""
    shaped: dict[str, Any] = {}
    for key, value in result.items():
        if key == "annotation":
            shaped["usedPreAggregations"] = used_pre_aggregations(used)
        shaped[key] = value
    return shaped


def _extra_row_values(query_type: str, compiled: CompiledQuery) -> dict[str, Any] | None:
    if query_type != COMPARE_DATE_RANGE:
        return None
    date_range = next(td.date_range for td in compiled.query.time_dimensions if td.date_range is not None)
    return {"compareDateRange": " - ".join(date_range)}


def _add_blending_time(plan: LoadPlan, results: list[dict[str, Any]]) -> None:
    """Blending rows carry ``time.<granularity>``: the value of their query's first time dimension."""
    for compiled, result in zip(plan.queries, results, strict=True):
        td = next(td for td in compiled.query.time_dimensions if td.granularity)
        key = f"{td.dimension}.{td.granularity}"
        data = result["data"]
        if isinstance(data, list):
            for row in data:
                row[f"time.{td.granularity}"] = row.get(key)


def pivot_query(plan: LoadPlan) -> dict[str, Any]:
    first = plan.queries[0].query.to_json()
    if plan.query_type == COMPARE_DATE_RANGE:
        first["dimensions"] = ["compareDateRange", *first["dimensions"]]
    elif plan.query_type == BLENDING:
        queries = [q.query for q in plan.queries]
        granularity = next(td.granularity for td in queries[0].time_dimensions if td.granularity)
        first["measures"] = list(dict.fromkeys(m for q in queries for m in q.measures))
        first["dimensions"] = list(dict.fromkeys(d for q in queries for d in q.dimensions))
        first["timeDimensions"] = [{"dimension": "time", "granularity": granularity}]
    first["queryType"] = plan.query_type
    return first


def _json_param(value: Any) -> Any:
    if isinstance(value, Decimal):
        return format(value, "f")
    return value


def sql_body(compiled: CompiledQuery) -> dict[str, Any]:
    """One query's ``sql`` object as Cube's ``/v1/sql`` shows it."""
    query = compiled.query
    body: dict[str, Any] = {
        "sql": [compiled.sql, [_json_param(p) for p in compiled.params]],
        "order": query.order_json(),
    }
    td = next((c for c in compiled.columns if c.role == "timeDimension"), None)
    if td is not None:
        body["timeDimensionAlias"] = td.alias
        body["timeDimensionField"] = td.member
    used = compiled.hints.get("preAggregation")
    described = []
    for part in used.get("parts", [used]) if used is not None else ():
        described.append(
            {
                "preAggregationId": part["preAggregationId"],
                "tableName": part["table"],
                "targetTableName": part["targetTableName"],
                "type": part["type"],
                "matched": part["matched"],
                "external": False,
                "dataSource": "default",
                **({"rollupLambdaId": part["rollupLambdaId"]} if "rollupLambdaId" in part else {}),
            }
        )
    body.update(
        {
            "cacheKeyQueries": [],
            "preAggregations": described,
            "dataSource": "default",
            "aliasNameToMember": compiled.alias_to_member,
            "canUseTransformedQuery": {},
            "memberNames": [c.key for c in compiled.columns],
            "external": False,
            "lambdaQueries": {},
        }
    )
    return body


def sql_response(plan: LoadPlan) -> Any:
    """The ``/v1/sql`` body: ``{"sql": {...}}``, or a list of them for compare/blending queries."""
    if plan.query_type == REGULAR:
        return {"sql": sql_body(plan.queries[0])}
    return [{"sql": sql_body(compiled)} for compiled in plan.queries]


def dry_run_response(plan: LoadPlan) -> dict[str, Any]:
    """The ``/v1/dry-run`` body."""
    return {
        "queryType": plan.query_type,
        "normalizedQueries": [q.query.to_json() for q in plan.queries],
        "queryOrder": [{o.id: "desc" if o.desc else "asc"} for o in plan.queries[0].query.order],
        "transformedQueries": [_transformed(q) for q in plan.queries],
        "pivotQuery": pivot_query(plan),
    }


def _transformed(compiled: CompiledQuery) -> dict[str, Any]:
    query = compiled.query
    return {
        "measures": list(query.measures),
        "sortedDimensions": sorted(query.dimensions),
        "sortedTimeDimensions": sorted(
            [td.dimension, td.granularity] for td in query.time_dimensions if td.granularity
        ),
        "hasMultipliedMeasures": bool(compiled.hints.get("multiplied")),
        "hasCumulativeMeasures": False,
    }
