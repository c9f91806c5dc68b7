"""Querysets compiled once and run many times: the ORM's convenience without its per-call compile cost.

Compiling a queryset to SQL (joins, select_related, annotations) often costs the ORM more CPU than running it
(ADR 0007). On hot paths (API-key authentication, generate-session) a
:class:`PreparedQuery` compiles the queryset once per database with sentinel parameter values, then
executes the cached SQL with the real values as bound parameters and builds the model instances with
the ORM's own converters and related-object populators, exactly as iterating the queryset would.

Limits: every argument must reach the SQL as exactly the bound parameter it was given (a plain
``field=value`` lookup), be an :class:`InList` for an ``__in`` lookup (compiled once per list
length), or a :class:`Nullable` that may be None (compiled once with ``IS NULL``, once with a
parameter); the ``MAX_SHAPES`` most recently compiled shapes are kept (the oldest makes room).
Lookups that transform a value (``__contains`` patterns) are refused when the query is first
compiled. An empty InList matches nothing, so no query runs (as the ORM answers
``filter(field__in=[])``): an InList must therefore not sit inside an OR.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import connections, router
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators
from django.db.models.sql.compiler import SQLCompiler

from embedadmin.core.rows import db_column

M = TypeVar("M", bound=Model)
MAX_SHAPES = 64


@dataclass(frozen=True)
class InList:
    """Marks an argument that is a list for an ``__in`` lookup; ``item`` is a sentinel of its items' type."""

    item: Any

    def sentinels(self, length: int) -> list[Any]:
        if isinstance(self.item, str):
            return [f"{self.item}{i}" for i in range(length)]
        return [self.item - i for i in range(length)]


@dataclass(frozen=True)
class Nullable:
    """Marks an argument that may be None (``field=None`` compiles to ``IS NULL``); ``value`` is a
    sentinel of its type for the non-null case."""

    value: Any


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    # position in params -> (argument, item of an InList), and the int wrapper the backend chose (Int4...)
    slots: tuple[tuple[int, tuple[int, int], Callable[[Any], Any] | None], ...]
    compiler: SQLCompiler
    using: str  # the database it was compiled for (compiler.using)
    init_list: tuple[str, ...]
    values_only: bool
    converters: dict[int, Any]  # the fields' from-database converters, as results_iter() finds them
    fields_start: int
    fields_end: int
    populators: tuple[Any, ...]


class PreparedQuery(Generic[M]):
    """``PreparedQuery(ApiKey, lambda prefix: ApiKey.objects.filter(prefix=prefix), sentinels=("\x00p",))``.

    ``sentinels`` are placeholder values of the arguments' types that cannot occur in the query's
    other parameters; they only locate the arguments among the compiled parameters.
    """

    def __init__(self, model: type[M], build: Callable[..., QuerySet[M, Any]], *, sentinels: Sequence[Any]) -> None:
        self._model = model
        self._build = build
        self._sentinels = tuple(sentinels)
        self._compiled: dict[str, _Compiled] = {}
        self._lock = threading.Lock()

    def _compile(self, alias: str | None, args: Sequence[Any]) -> _Compiled:
        db = alias or router.db_for_read(self._model)
        shape = tuple(
            len(a) if isinstance(s, InList) else a is None
            for a, s in zip(args, self._sentinels, strict=True)
            if isinstance(s, InList | Nullable)
        )
        key = f"{db}:{shape}"
        cached = self._compiled.get(key)
        if cached is not None:
            return cached
        with self._lock:
            if key in self._compiled:
                return self._compiled[key]
            # Each argument's sentinel values: one per list item for an InList, none for a null Nullable.
            expanded = [_expanded(s, a) for s, a in zip(self._sentinels, args, strict=True)]
            build_args = [
                values if isinstance(s, InList) else (values[0] if values else None)
                for s, values in zip(self._sentinels, expanded, strict=True)
            ]
            query = self._build(*build_args).query
            compiler = query.get_compiler(using=db)
            sql, params = compiler.as_sql()
            wanted = {
                _match_key(v): (index, item) for index, values in enumerate(expanded) for item, v in enumerate(values)
            }
            slots = tuple(
                (position, wanted[_match_key(value)], _wrapper(value))
                for position, value in enumerate(params)
                if _match_key(value) in wanted
            )
            if {slot for _, slot, _ in slots} != set(wanted.values()):
                raise ValueError("every argument of a PreparedQuery must be a plain bound parameter or an InList")
            klass_info = compiler.klass_info
            values_only = bool(query.values_select) or klass_info is None
            if values_only:  # a values_list() query: rows, not instances
                start = end = 0
                init_list: tuple[str, ...] = ()
                populators: tuple[Any, ...] = ()
            else:
                select_fields = klass_info["select_fields"]
                start, end = select_fields[0], select_fields[-1] + 1
                init_list = tuple(f[0].target.attname for f in compiler.select[start:end])
                # django-stubs describes Django 6.1's signature (a fetch_mode argument); Django 5.2 takes three.
                populators = tuple(get_related_populators(klass_info, compiler.select, db))  # type: ignore[call-arg]
            compiled = _Compiled(
                sql=sql,
                params=tuple(params),
                slots=slots,
                compiler=compiler,
                using=db,
                init_list=init_list,
                values_only=values_only,
                converters=compiler.get_converters([s[0] for s in compiler.select[: compiler.col_count]]),
                fields_start=start,
                fields_end=end,
                populators=populators,
            )
            if len(self._compiled) >= MAX_SHAPES:  # the oldest shape makes room: a cold caller cannot fill it for good
                del self._compiled[next(iter(self._compiled))]
            self._compiled[key] = compiled
        return compiled

    def _execute(self, args: Sequence[Any], using: str | None, *, values: bool) -> tuple[_Compiled, list[Any]]:
        compiled = self._compile(using, args)
        if compiled.values_only != values:
            raise TypeError(
                "rows() is for values_list() queries, fetch() for model instances"
                f" (this query {'is' if compiled.values_only else 'is not'} a values_list() query)"
            )
        params = list(compiled.params)
        for position, (index, item), wrap in compiled.slots:
            value = args[index][item] if isinstance(self._sentinels[index], InList) else args[index]
            params[position] = wrap(value) if wrap is not None and value is not None else value
        with connections[compiled.using].cursor() as cursor:
            cursor.execute(compiled.sql, params)
            return compiled, cursor.fetchall()

    def _matches_nothing(self, args: Sequence[Any]) -> bool:
        """Whether an :class:`InList` argument is empty: the ORM cannot compile ``__in=[]`` (it raises
        ``EmptyResultSet`` and answers without a query), so neither is there anything to run here."""
        return any(isinstance(s, InList) and not a for s, a in zip(self._sentinels, args, strict=True))

    def rows(self, *args: Any, using: str | None = None) -> list[tuple[Any, ...]]:
        """Run a ``values_list()`` query: its rows as tuples, through the fields' converters (JSON and
        time zones arrive as the ORM would give them)."""
        if self._matches_nothing(args):
            return []
        compiled, rows = self._execute(args, using, values=True)
        return [tuple(row) for row in _converted(compiled, rows)]

    def fetch(self, *args: Any, using: str | None = None) -> list[M]:
        """Run the query with ``args`` in place of the sentinels; the instances it returns."""
        if self._matches_nothing(args):
            return []
        compiled, rows = self._execute(args, using, values=False)
        compiler = compiled.compiler
        db = compiled.using
        model = compiler.klass_info["model"]
        annotations = compiler.annotation_col_map
        objects: list[M] = []
        for row in _converted(compiled, rows):
            obj = model.from_db(db, compiled.init_list, row[compiled.fields_start : compiled.fields_end])
            for populator in compiled.populators:
                populator.populate(row, obj)
            for name, position in annotations.items():
                setattr(obj, name, row[position])
            objects.append(obj)
        return objects

    def first(self, *args: Any, using: str | None = None) -> M | None:
        """The first instance, or None (build the queryset with ``[:1]`` to fetch only one row)."""
        found = self.fetch(*args, using=using)
        return found[0] if found else None


def _converted(compiled: _Compiled, rows: list[Any]) -> Any:
    """``results_iter()`` without looking the converters up again on every call."""
    if not compiled.converters:
        return rows
    return compiled.compiler.apply_converters(rows, compiled.converters)


def _match_key(value: Any) -> tuple[type, Any]:
    """How a compiled parameter is matched to its sentinel: PostgreSQL's backend passes integers of
    integer lookups wrapped in psycopg's sized types (``Int4(5)``), which are ints of another class."""
    if isinstance(value, int) and not isinstance(value, bool):
        return int, int(value)
    return type(value), value


def _wrapper(value: Any) -> Callable[[Any], Any] | None:
    """The int subclass the backend wrapped a parameter in, to wrap the real value the same way."""
    kind = type(value)
    return kind if isinstance(value, int) and kind not in (int, bool) else None


def _expanded(sentinel: Any, arg: Any) -> list[Any]:
    """The sentinel values standing for one argument in the compiled parameters."""
    if isinstance(sentinel, InList):
        return sentinel.sentinels(len(arg))
    if isinstance(sentinel, Nullable):
        return [] if arg is None else [sentinel.value]
    return [sentinel]


class PreparedInsert(Generic[M]):
    """``PreparedInsert(EmbedSession).create(**values)``: ``Model.objects.create()`` for hot paths.

    The INSERT is built once per database from the model's metadata (identifiers only; every value is a
    bound parameter), and each call converts the values with the fields' own ``pre_save`` and
    ``get_db_prep_save`` (defaults, ``auto_now_add``, JSON), so the row is the one ``create()`` writes.
    Unlike ``create()`` it sends no ``pre_save``/``post_save`` signals; the models it is used for have
    no receivers.
    """

    def __init__(self, model: type[M]) -> None:
        self._model = model
        self._compiled: dict[str, tuple[str, tuple[Any, ...], bool]] = {}

    def _compile(self, db: str) -> tuple[str, tuple[Any, ...], bool]:
        cached = self._compiled.get(db)
        if cached is not None:
            return cached
        connection = connections[db]
        meta = self._model._meta
        fields = tuple(f for f in meta.concrete_fields if f is not meta.auto_field and not f.generated)
        qn = connection.ops.quote_name
        returning = connection.features.can_return_columns_from_insert
        sql = (
            f"INSERT INTO {qn(meta.db_table)} ({', '.join(qn(db_column(f)) for f in fields)}) "  # noqa: S608
            f"VALUES ({', '.join(['%s'] * len(fields))})"
        )
        if returning and meta.auto_field is not None:
            sql += f" RETURNING {qn(db_column(meta.auto_field))}"
        compiled = (sql, fields, returning)
        self._compiled[db] = compiled
        return compiled

    def create(self, *, using: str | None = None, **values: Any) -> M:
        db = using or router.db_for_write(self._model)
        sql, fields, returning = self._compile(db)
        obj = self._model(**values)
        connection = connections[db]
        params = [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            if self._model._meta.auto_field is not None:
                pk = cursor.fetchone()[0] if returning else cursor.lastrowid
                setattr(obj, self._model._meta.auto_field.attname, pk)
        obj._state.adding = False
        obj._state.db = db
        return obj
