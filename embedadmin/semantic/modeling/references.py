"""SQL snippets of the model: ``{...}`` references resolved, text parsed once into a sqlglot tree.

Reference forms (Cube's YAML syntax): ``{CUBE}``, ``{CUBE.member}``, ``{member}``, ``{cube}``,
``{cube.member}``, ``{cube1.cube2.member}`` (a join path), ``{CUBE.cube2.member}`` (a join path from this
cube), ``{time_dim.granularity}``,
``{cube.member.granularity}`` and ``{cube.sql()}``. Each becomes a placeholder identifier in the text
before parsing; the SQL builder swaps placeholders for table aliases and member expressions.

Bare columns of a member's SQL (outside subqueries) are qualified with the cube's alias, so ``amount * 2``
stays unambiguous when the query joins several tables (Cube only does this for a lone column name).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from embedadmin.semantic.modeling.context_variables import (
    ContextVariableError,
    check_placeholders,
    rewrite_context_variables,
)
from embedadmin.semantic.modeling.model import (
    ContextReference,
    CubeReference,
    CubeSqlReference,
    MemberReference,
    Reference,
    SourceLocation,
    SqlSnippet,
)

PLACEHOLDER_PREFIX = "__cuberef_"
_REFERENCE = re.compile(r"\{([^{}]*)\}")
# Read by .context_variables before references are resolved; these spellings reach the resolver only when
# written the way no context variable is (``{securityContext.x}``: an access policy's syntax, not SQL's).
_CONTEXT_VARIABLES = ("securityContext", "security_context")
_PLAIN_COLUMN = re.compile(r"^\s*(?:([A-Za-z_][A-Za-z0-9_]*)\.)?([A-Za-z_][A-Za-z0-9_]*)\s*$")
# Bare words the parser reads as something other than a column.
_NOT_COLUMNS = frozenset(
    {
        "true",
        "false",
        "null",
        "current_date",
        "current_time",
        "current_timestamp",
        "localtime",
        "localtimestamp",
        "current_user",
        "session_user",
        "current_schema",
        "current_catalog",
        "current_role",
        "default",
        "interval",
        "select",
        "with",
    }
)
PREDEFINED_GRANULARITIES = ("second", "minute", "hour", "day", "week", "month", "quarter", "year")


class SnippetError(ValueError):
    """A snippet that cannot be resolved or parsed; the compiler adds file, line and member."""


@dataclass(frozen=True, slots=True)
class SnippetScope:
    """What a snippet may refer to: its own cube, and every cube's member names."""

    cube: str
    members: Mapping[str, Mapping[str, str]]  # cube -> member name -> kind ("measure"/"dimension"/"segment")
    time_granularities: Mapping[str, Mapping[str, frozenset[str]]]  # cube -> time dimension -> custom grains
    compile_context: Mapping[str, Any] = field(default_factory=dict)  # COMPILE_CONTEXT of this compile


def parse_snippet(
    text: object, scope: SnippetScope, location: SourceLocation, dialect: str, *, qualify: bool = True
) -> SqlSnippet:
    """Resolve the references in ``text`` and parse it; raises :class:`SnippetError`."""
    if not isinstance(text, str | int | float) or isinstance(text, bool):
        raise SnippetError("sql must be a string")
    refs: dict[str, Reference] = {}
    by_reference: dict[Reference, str] = {}

    def placeholder(reference: Reference) -> str:
        if reference not in by_reference:
            name = f"{PLACEHOLDER_PREFIX}{len(by_reference)}"
            by_reference[reference] = name
            refs[name] = reference
        return by_reference[reference]

    def context_placeholder(make: Callable[[str], ContextReference]) -> str:
        name = f"{PLACEHOLDER_PREFIX}{len(refs)}"
        refs[name] = make(name)
        by_reference[refs[name]] = name
        return name

    def substitute(match: re.Match[str]) -> str:
        return placeholder(resolve_reference(match.group(1).strip(), scope))

    try:
        source = rewrite_context_variables(
            str(text), compile_context=scope.compile_context, placeholder=context_placeholder, members=scope.members
        )
    except ContextVariableError as exc:
        raise SnippetError(str(exc)) from None
    source = _REFERENCE.sub(substitute, source)
    tree = _plain_column(source) or _parse(source, str(text), dialect)
    try:
        check_placeholders(tree, refs, source)
    except ContextVariableError as exc:
        raise SnippetError(str(exc)) from None
    if qualify and not isinstance(tree, exp.Query):
        _qualify_bare_columns(tree, refs, lambda: placeholder(CubeReference(scope.cube)))
    return SqlSnippet(text=str(text), tree=tree, refs=refs, location=location)


def _parse(source: str, text: str, dialect: str) -> exp.Expr:
    try:
        statements = [s for s in sqlglot.parse(source, read=dialect) if s is not None]
    except SqlglotError as exc:
        raise SnippetError(f"invalid SQL {text!r}: {_first_line(exc)}") from None
    if len(statements) != 1:
        raise SnippetError(f"invalid SQL {text!r}: expected one expression")
    return statements[0]


def _plain_column(source: str) -> exp.Column | None:
    """``amount`` or ``{CUBE}.amount``, by far the most common member SQL, without running the parser."""
    match = _PLAIN_COLUMN.match(source)
    if match is None or match.group(2).lower() in _NOT_COLUMNS or (match.group(1) or "").lower() in _NOT_COLUMNS:
        return None
    return exp.column(match.group(2), table=match.group(1))


def resolve_reference(content: str, scope: SnippetScope) -> Reference:
    """Turn the inside of ``{...}`` into a :class:`Reference` against the model's names."""
    parts = [p.strip() for p in content.split(".")]
    if not content or any(not p for p in parts):
        raise SnippetError(f"empty reference {{{content}}}")
    if parts[0] in _CONTEXT_VARIABLES:
        raise SnippetError(
            f"{{{content}}}: {parts[0]} is an access policy's; in SQL write SECURITY_CONTEXT.x.filter('column') "
            "(a bound value), or use an access_policy row filter"
        )
    if parts[-1] == "sql()":
        cube = scope.cube if parts[:-1] == ["CUBE"] else ".".join(parts[:-1])
        if cube not in scope.members:
            raise SnippetError(f"{{{content}}}: unknown cube {cube!r}")
        return CubeSqlReference(cube)
    cube = scope.cube
    # {CUBE.x}: this cube's member x; {CUBE.other.x}: other's member x, joined from this cube (a join hint).
    through_cube = parts[0] == "CUBE"
    rest = parts[1:] if through_cube else parts
    path: list[str] = []
    if rest and rest[0] not in scope.members[cube] and rest[0] in scope.members:
        # A cube name, possibly followed by more cube names (a join path).
        while rest and rest[0] in scope.members and (not path or rest[0] not in scope.members[path[-1]]):
            path.append(rest[0])
            rest = rest[1:]
        cube = path[-1]
    if not rest:
        return CubeReference(cube)
    member = rest[0]
    if member not in scope.members[cube]:
        raise SnippetError(f"{{{content}}}: {cube!r} has no member {member!r}")
    granularity = None
    if len(rest) == 2:
        granularity = rest[1]
        custom = scope.time_granularities.get(cube, {}).get(member)
        if custom is None:
            raise SnippetError(f"{{{content}}}: {cube}.{member} is not a time dimension")
        if granularity not in PREDEFINED_GRANULARITIES and granularity not in custom:
            raise SnippetError(f"{{{content}}}: unknown granularity {granularity!r}")
    elif len(rest) > 2:
        raise SnippetError(f"{{{content}}}: cannot resolve reference")
    join_path = tuple([scope.cube, *path]) if len(path) > 1 or (through_cube and path) else ()
    kind = scope.members[cube][member]
    return MemberReference(cube=cube, member=member, granularity=granularity, path=join_path, kind=kind)


def _qualify_bare_columns(tree: exp.Expr, refs: dict[str, Reference], self_alias: Callable[[], str]) -> None:
    """Give every unqualified column outside subqueries and lambdas the cube's alias."""

    def prune(node: exp.Expr) -> bool:
        return node is not tree and isinstance(node, exp.Query | exp.Subquery | exp.Lambda)

    for node in list(tree.walk(prune=prune)):
        if not isinstance(node, exp.Column) or node.table or node.name.startswith(PLACEHOLDER_PREFIX):
            continue
        if isinstance(node.this, exp.Star):
            continue
        node.set("table", exp.to_identifier(self_alias()))


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
