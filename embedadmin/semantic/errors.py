"""The errors the semantic layer raises; each carries the HTTP status Cube answers with.

They subclass :class:`embedadmin.core.errors.ApiError`, so the API's one exception handler renders them
as ``{"error": "..."}`` with the right status and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

from embedadmin.core.errors import ApiError


@dataclass(frozen=True, slots=True)
class ModelProblem:
    """One fault in a model file: where it is, which cube/view member it concerns, and what is wrong."""

    file: str
    line: int
    member: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.member}: {self.message}" if self.member else f"{where}: {self.message}"


class ModelError(ApiError):
    """A data model that does not compile. ``problems`` lists every fault found; the message names the first.

    Reported to API callers with status 400 (the model, not the server, is at fault), in logs and in the panel.
    """

    status = 400

    def __init__(self, problems: list[ModelProblem]) -> None:
        self.problems = problems
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"Model error: {first}{more}")
        self.file = first.file
        self.line = first.line
        self.member = first.member


class QueryError(ApiError):
    """A query Cube would answer with 400: bad shape, unknown or hidden member, bad time zone, bad date."""

    status = 400


class AccessDenied(ApiError):
    """A caller who reads only what was granted (an embed viewer) named a cube, view or member outside the grant:
    403 with Cube's error shape. The message is the same for a name that does not exist, so a refusal tells a
    viewer nothing about the model beyond their grant."""

    status = 403


class QueryLimitError(ApiError):
    """``limit`` above the maximum: ``Error: The query limit has been exceeded.``, Cube's message. Cube answers it
    with a 500; here it is a 400, as the contract (spec section 7: 5XX is an internal error) and every other
    error a request causes. The JS client treats both alike: it throws the body's ``error``."""

    status = 400

    def __init__(self) -> None:
        super().__init__("Error: The query limit has been exceeded.")


class DataSourceError(Exception):
    """A query failed in the data source; ``str()`` is safe to show to an API caller."""


class QueryTimeout(DataSourceError):
    """A query ran past its timeout and was interrupted."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(f"Query timeout: the query ran longer than {timeout_s:g} s and was stopped")
        self.timeout_s = timeout_s

    def __reduce__(self) -> tuple[type, tuple[float]]:
        return (QueryTimeout, (self.timeout_s,))
