"""What the model's context variables are in one query: ``SECURITY_CONTEXT``, ``FILTER_PARAMS`` and ``FILTER_GROUP``.

The compiler left a placeholder call where the model wrote each (:mod:`embedadmin.semantic.modeling.context_variables`);
the renderer hands each to :class:`ContextValues`, which the statement builder makes for its query. Every value
that comes from the caller or the query is a bound parameter: a security-context value, a filter's values.

- ``SECURITY_CONTEXT.x.filter('col')``: ``col = $n`` (``col IN ($n, ...)`` for a list; FALSE for an empty one),
  ``1 = 1`` when the caller's security context has no ``x`` (Cube's semantics; ``requiredFilter`` is a 400 then).
  A value that is ``0``, ``false`` or ``""`` is a value: Cube reads it as unset and filters nothing, which would
  open every row to a tenant whose id is 0. ``unsafeValue()`` is the value as a parameter (NULL when unset).
- ``FILTER_PARAMS.cube.member.filter('col')``: the query's conditions on that member (a view member standing for
  it counts) with ``col`` in the member's place, ``1 = 1`` when there are none. ``FILTER_GROUP(...)`` keeps the
  query's ``and``/``or`` between the members it names. A condition is pushed down only where that is sound: under
  an ``or`` that also tests another member, nothing is pushed for that ``or`` (the outer ``WHERE`` still filters),
  and a rolling window's own range is never pushed (its rows before the range are needed).
- A function form (``filter(lambda x, y: ...)``) gets the condition's values as parameters, as Cube passes them:
  a date range's two bounds (UTC instants, as text), a comparison's value, each of an ``equals``' values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any
from zoneinfo import ZoneInfo

from sqlglot import exp

from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.errors import QueryError
from embedadmin.semantic.modeling.dependencies import member_snippets
from embedadmin.semantic.modeling.model import (
    CompiledModel,
    FilterGroupReference,
    FilterParamsReference,
    Member,
    Reference,
    SecurityContextReference,
)
from embedadmin.semantic.query.normalized import FilterCondition, FilterGroup, FilterNode
from embedadmin.semantic.sql.expressions import all_of, any_of, wrap
from embedadmin.semantic.sql.filters import FilterCompiler, Parameters

_SCALARS = (str, int, float, bool)


def reads_security_context(model: CompiledModel) -> bool:
    """Whether any SQL of the model reads ``SECURITY_CONTEXT`` (its compiled queries then differ per caller)."""
    known = model.caches.get("reads_security_context")
    if known is None:
        snippets = []
        for entity in model.entities.values():
            if entity.sql is not None:
                snippets.append(entity.sql)
            snippets.extend(join.sql for join in entity.joins)
            for section in (entity.measures, entity.dimensions, entity.segments):
                for member in section.values():
                    snippets.extend(member_snippets(member))
        known = model.caches.setdefault("reads_security_context", any(s.reads_security_context() for s in snippets))
    return bool(known)


def _one_to_one() -> exp.Expr:
    return exp.EQ(this=exp.Literal.number(1), expression=exp.Literal.number(1))


class ContextValues:
    """The context variables of one statement: the caller's security context, the query's filters to push
    down (``filters``, set by the builder; ``skip`` one of them while a rolling window's rows are read)."""

    def __init__(
        self,
        *,
        ctx: QueryContext,
        params: Parameters,
        zone: ZoneInfo,
        member: Callable[[str], Member],
        value_type: Callable[[str], str],
    ) -> None:
        self.ctx = ctx
        self.params = params
        self.zone = zone
        self.member = member
        self.value_type = value_type
        self.filters: Sequence[FilterNode] = ()
        self.skip: FilterNode | None = None

    def __call__(self, reference: Reference, node: exp.Expr, refs: Mapping[str, Reference]) -> exp.Expr:
        if isinstance(reference, SecurityContextReference):
            return self.security_context(reference, node)
        assert isinstance(node, exp.Anonymous)
        if isinstance(reference, FilterParamsReference):
            return self.filter_group([(reference, node)])
        assert isinstance(reference, FilterGroupReference)
        children = []
        for argument in node.expressions:
            child = refs.get(argument.name) if isinstance(argument, exp.Anonymous) else None
            assert isinstance(child, FilterParamsReference)  # the compiler wrote only these
            children.append((child, argument))
        return self.filter_group(children)

    # -- SECURITY_CONTEXT ---------------------------------------------------------------------------------------

    def _claim(self, reference: SecurityContextReference) -> tuple[bool, Any]:
        value: Any = self.ctx.stable_security_context
        for part in reference.path:
            if not isinstance(value, Mapping) or value.get(part) is None:
                return False, None
            value = value[part]
        written = f"SECURITY_CONTEXT.{'.'.join(reference.path)}"
        items = value if isinstance(value, list) else [value]
        if isinstance(value, Mapping) or not all(isinstance(item, _SCALARS) for item in items):
            raise QueryError(f"{written} is not a value or a list of values in this security context")
        if isinstance(value, list) and reference.method == "unsafeValue":
            raise QueryError(f"{written} is a list in this security context: use {written}.filter('column')")
        return True, value

    def security_context(self, reference: SecurityContextReference, node: exp.Expr) -> exp.Expr:
        present, value = self._claim(reference)
        if reference.method == "unsafeValue":
            return self.params.add(value) if present else exp.Null()
        if not present:
            if reference.method == "requiredFilter":
                raise QueryError(f"Filter for {reference.column} is required")
            return _one_to_one()
        assert isinstance(node, exp.Anonymous)
        if reference.parameters is not None:
            body = node.expressions[0].copy()

            def bound() -> exp.Expr | list[exp.Expr]:
                return [self.params.add(v) for v in value] if isinstance(value, list) else self.params.add(value)

            written = f"SECURITY_CONTEXT.{'.'.join(reference.path)}"
            return exp.Paren(this=_substituted(body, reference.parameters, [bound], written))
        column = wrap(node.expressions[0].copy())
        if isinstance(value, list):
            if not value:
                return exp.false()
            return exp.In(this=column, expressions=[self.params.add(v) for v in value])
        return exp.EQ(this=column, expression=self.params.add(value))

    # -- FILTER_PARAMS and FILTER_GROUP -------------------------------------------------------------------------

    def filter_group(self, children: list[tuple[FilterParamsReference, exp.Anonymous]]) -> exp.Expr:
        by_member = {f"{reference.cube}.{reference.member}": (reference, call) for reference, call in children}

        def child_of(node: FilterCondition) -> tuple[FilterParamsReference, exp.Anonymous] | None:
            member = self.member(node.member)
            return by_member.get(member.alias_member or member.full_name)

        def pushable(node: FilterNode) -> bool:
            """Whether some of ``node`` can be pushed down soundly (an ``or`` only when all of it can)."""
            if isinstance(node, FilterCondition):
                return child_of(node) is not None and node.operator != "measureFilter" and bool(node.values)
            if isinstance(node, FilterGroup):
                if node.kind == "and":
                    return any(pushable(item) for item in node.items)
                return bool(node.items) and all(pushable(item) for item in node.items)
            return False  # a contradiction: the outer WHERE answers it

        def restrict(node: FilterNode) -> exp.Expr:
            """``node`` with only the group's members (checked pushable first: nothing is bound for a part that
            is not used)."""
            if isinstance(node, FilterCondition):
                child = child_of(node)
                assert child is not None
                return self.pushed(node, *child)
            assert isinstance(node, FilterGroup)
            parts = [wrap(restrict(item)) for item in node.items if pushable(item)]
            return all_of(*parts) if node.kind == "and" else exp.Paren(this=any_of(*parts))

        pushed = [restrict(n) for n in self.filters if n is not self.skip and pushable(n)]
        if not pushed:
            return _one_to_one()
        return exp.Paren(this=all_of(*(wrap(c) for c in pushed)))

    def pushed(self, node: FilterCondition, reference: FilterParamsReference, call: exp.Anonymous) -> exp.Expr:
        """One condition of the query with the FILTER_PARAMS argument in its member's place."""
        argument = call.expressions[0]
        compiler = FilterCompiler(
            self.params, self.zone, lambda _: argument.copy(), self.value_type, lambda _: exp.true()
        )
        if reference.parameters is None:
            return compiler.condition(node)
        values = compiler.arguments(node)
        return exp.Paren(
            this=_substituted(argument.copy(), reference.parameters, values, f"{reference.cube}.{reference.member}")
        )


Bind = Callable[[], "exp.Expr | list[exp.Expr]"]


def _substituted(body: exp.Expr, parameters: tuple[str, ...], values: Sequence[Bind], written: str) -> exp.Expr:
    """``body`` with each parameter placeholder replaced by its bound value (NULL for one the condition lacks, as
    Cube writes ``undefined``); a list goes only where a list can, inside ``IN (...)``. A value is bound when its
    parameter is first used (a parameter the statement does not use is one PostgreSQL cannot type)."""
    bound: dict[int, exp.Expr | list[exp.Expr]] = {}
    for column in list(body.find_all(exp.Column)):
        if column.table or column.name not in parameters:
            continue
        index = parameters.index(column.name)
        if index not in bound:
            bound[index] = values[index]() if index < len(values) else exp.Null()
        value = bound[index]
        if not isinstance(value, list):
            value = value.copy()
            if column is body:
                return value
            column.replace(value)
            continue
        parent = column.parent
        if isinstance(parent, exp.In) and column in parent.expressions:
            position = parent.expressions.index(column)
            expressions = list(parent.expressions)
            expressions[position : position + 1] = [v.copy() for v in value] or [exp.Null()]
            parent.set("expressions", expressions)
            continue
        raise QueryError(f"{written} is a list of values: its function may use it only inside IN (...)")
    return body
