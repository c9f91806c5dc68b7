"""Cube's context variables in model SQL, read when a snippet is parsed (:func:`.references.parse_snippet`).

- ``{SECURITY_CONTEXT.a.b.filter('col')}`` (and ``requiredFilter``, ``unsafeValue()``; ``USER_CONTEXT`` is its old
  name), ``{FILTER_PARAMS.cube.member.filter('col')}``, ``{FILTER_GROUP(FILTER_PARAMS..., ...)}`` and
  ``{SQL_UTILS.convertTz('col')}`` become placeholders in the snippet's text: a call ``__cuberef_N(col)`` whose
  argument is the column written (its own ``{...}`` references resolved as any others), or a bare
  ``__cuberef_N`` for ``unsafeValue()``. The SQL builder turns each into a condition or a value of the query it
  compiles, its values bound as parameters (:mod:`embedadmin.semantic.sql.context`): nothing from a caller is
  ever written into SQL text.
- ``filter()`` also takes a function: a Python lambda in YAML (``lambda x, y: f"col >= {x} AND col <= {y}"``, as
  Cube's docs write it) or a JavaScript function, which the sandbox writes in that form. Its parameters become
  placeholders ``__cuberef_N_p0``... that the builder binds to the filter's values.
- ``{COMPILE_CONTEXT.securityContext.x}`` is replaced by the compile context's value when the model compiles (a
  model is compiled per compile key: :mod:`.registry`); those values are checked to be identifier-safe before any
  model is compiled for them (``embedadmin.semantic.serving.tenancy``).

Where a placeholder may stand is checked once the snippet is parsed (:func:`check_placeholders`): a value where
a value goes, never a table or column name and never inside a string literal.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from typing import Any

from sqlglot import exp

from embedadmin.semantic.context import VOLATILE_CLAIMS
from embedadmin.semantic.modeling.model import (
    ContextReference,
    ConvertTzReference,
    FilterGroupReference,
    FilterParamsReference,
    Reference,
    SecurityContextReference,
)

SECURITY_CONTEXT_NAMES = ("SECURITY_CONTEXT", "USER_CONTEXT")
SQL_VARIABLES = (*SECURITY_CONTEXT_NAMES, "FILTER_PARAMS", "FILTER_GROUP", "SQL_UTILS")
SECURITY_METHODS = ("filter", "requiredFilter", "unsafeValue")
_START = re.compile(r"\{\s*(" + "|".join(SQL_VARIABLES) + r"|COMPILE_CONTEXT)\b")
_NAME = re.compile(r"[A-Za-z_$][\w$]*")
_PAIRS = {"(": ")", "[": "]", "{": "}"}


class ContextVariableError(ValueError):
    """A context variable written in a way this server cannot honour; the message says what and why."""


# --- finding the calls in a snippet's text -------------------------------------------------------------------------


def _string_end(text: str, start: int) -> int:
    """The index after the string literal starting at ``start`` (', ", ` or a triple quote)."""
    quote = text[start]
    if text.startswith(quote * 3, start) and quote in "'\"":
        end = text.find(quote * 3, start + 3)
        if end < 0:
            raise ContextVariableError("a string is not closed")
        return end + 3
    index = start + 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == quote:
            return index + 1
        index += 1
    raise ContextVariableError("a string is not closed")


def _closing(text: str, start: int) -> int:
    """The index of the bracket closing the one at ``start``, strings skipped."""
    stack = [_PAIRS[text[start]]]
    index = start + 1
    while index < len(text):
        char = text[index]
        if char in "'\"`":
            index = _string_end(text, index)
            continue
        if char in _PAIRS:
            stack.append(_PAIRS[char])
        elif char in ")]}":
            if char != stack.pop():
                raise ContextVariableError(f"unbalanced {char!r}")
            if not stack:
                return index
        index += 1
    raise ContextVariableError(f"{text[start]!r} is not closed")


def rewrite_context_variables(
    text: str,
    *,
    compile_context: Mapping[str, Any],
    placeholder: Callable[[Callable[[str], ContextReference]], str],
    members: Mapping[str, Mapping[str, str]],
) -> str:
    """``text`` with each context variable replaced by its placeholder (or, for COMPILE_CONTEXT, its value).
    ``placeholder(make)`` names a new placeholder and registers ``make(name)`` as what it stands for."""
    out: list[str] = []
    position = 0
    while True:
        match = _START.search(text, position)
        if match is None:
            out.append(text[position:])
            return "".join(out)
        end = _closing(text, match.start())
        out.append(text[position : match.start()])
        content = text[match.start() + 1 : end].strip()
        if match.group(1) == "COMPILE_CONTEXT":
            out.append(compile_context_value(content, compile_context))
        else:
            out.append(_Reader(content, placeholder, members).call())
        position = end + 1


def compile_context_value(content: str, compile_context: Mapping[str, Any]) -> str:
    """The text of ``COMPILE_CONTEXT.a.b`` in the compile context (identifier-safe values only reach it)."""
    path = content.split(".")[1:]
    value: Any = compile_context
    for part in path:
        key = "securityContext" if part == "security_context" else part.strip()
        if not isinstance(value, Mapping) or value.get(key) is None:
            raise ContextVariableError(
                f"{{{content}}}: the compile context has no {'.'.join(path) or 'value'} (it holds the security "
                "context fields the deployment compiles its model per: compileContextKeys)"
            )
        value = value[key]
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int):
        return str(value)
    raise ContextVariableError(f"{{{content}}}: {type(value).__name__} is not a value SQL can hold")


def substitute_compile_context(text: str, compile_context: Mapping[str, Any]) -> str:
    """``text`` (a ``sql_table``) with ``{COMPILE_CONTEXT...}`` replaced; any other context variable refused."""
    if _START.search(text) is None:
        return text
    out: list[str] = []
    position = 0
    for match in _START.finditer(text):
        if match.start() < position:
            continue
        if match.group(1) != "COMPILE_CONTEXT":
            raise ContextVariableError(f"{match.group(1)} cannot name a table: write it in the cube's sql")
        end = _closing(text, match.start())
        out.append(text[position : match.start()])
        out.append(compile_context_value(text[match.start() + 1 : end].strip(), compile_context))
        position = end + 1
    out.append(text[position:])
    return "".join(out)


class _Reader:
    """Reads one context variable call (the text inside its braces) and writes its placeholder."""

    def __init__(
        self,
        text: str,
        placeholder: Callable[[Callable[[str], ContextReference]], str],
        members: Mapping[str, Mapping[str, str]],
    ) -> None:
        self.text = text
        self.index = 0
        self.placeholder = placeholder
        self.members = members

    # -- tokens ------------------------------------------------------------------------------------------------

    def _space(self) -> None:
        while self.index < len(self.text) and self.text[self.index].isspace():
            self.index += 1

    def _name(self) -> str:
        self._space()
        match = _NAME.match(self.text, self.index)
        if match is None:
            raise ContextVariableError(f"{{{self.text}}}: expected a name at {self.text[self.index :][:20]!r}")
        self.index = match.end()
        return match.group(0)

    def _take(self, char: str) -> bool:
        self._space()
        if self.text.startswith(char, self.index):
            self.index += len(char)
            return True
        return False

    def _expect(self, char: str) -> None:
        if not self._take(char):
            raise ContextVariableError(f"{{{self.text}}}: expected {char!r} at {self.text[self.index :][:20]!r}")

    def _argument_text(self) -> str:
        """The text of a call's one argument, up to its closing parenthesis (the opening one was just read)."""
        end = _closing(self.text, self.index - 1)
        argument = self.text[self.index : end]
        self.index = end + 1
        return argument.strip()

    # -- grammar -----------------------------------------------------------------------------------------------

    def call(self) -> str:
        written = self._one()
        self._space()
        if self.index != len(self.text):
            raise ContextVariableError(f"{{{self.text}}}: unexpected {self.text[self.index :][:20]!r} after the call")
        return written

    def _one(self) -> str:
        name = self._name()
        if name in SECURITY_CONTEXT_NAMES:
            return self._security_context(name)
        if name == "FILTER_PARAMS":
            return self._filter_params()
        if name == "FILTER_GROUP":
            return self._filter_group()
        if name == "SQL_UTILS":
            return self._sql_utils()
        raise ContextVariableError(f"{{{self.text}}}: {name} is not a context variable")

    def _security_context(self, name: str) -> str:
        path: list[str] = []
        method = ""
        while self._take("."):
            part = self._name()
            if part in SECURITY_METHODS and self.text[self.index :].lstrip().startswith("("):
                method = part
                break
            path.append(part)
        if not method or not path:
            raise ContextVariableError(
                f"{{{self.text}}}: {name} names a claim and a method: {name}.claim.filter('column'), "
                ".requiredFilter('column') or .unsafeValue()"
            )
        if path[0] in VOLATILE_CLAIMS:
            raise ContextVariableError(
                f"{{{self.text}}}: securityContext.{path[0]} differs between tokens of one viewer, and queries are "
                "compiled and cached per viewer without it; use a claim that identifies what the viewer may see"
            )
        self._expect("(")
        if method == "unsafeValue":
            self._expect(")")
            return self.placeholder(lambda _: SecurityContextReference(tuple(path), method))
        argument = parse_argument(self._argument_text(), self.text)
        return self._called(
            lambda parameters: SecurityContextReference(tuple(path), method, argument.column, parameters), argument
        )

    def _filter_params(self) -> str:
        cube = self._name() if self._take(".") else ""
        member = self._name() if self._take(".") else ""
        if not self._take(".") or self._name() != "filter" or not self._take("("):
            raise ContextVariableError(
                f"{{{self.text}}}: write FILTER_PARAMS.cube_name.member_name.filter(sql_expression)"
            )
        if cube not in self.members:
            raise ContextVariableError(f"{{{self.text}}}: unknown cube {cube!r}")
        if member not in self.members[cube]:
            raise ContextVariableError(f"{{{self.text}}}: {cube!r} has no member {member!r}")
        argument = parse_argument(self._argument_text(), self.text)
        return self._called(lambda parameters: FilterParamsReference(cube, member, parameters), argument)

    def _filter_group(self) -> str:
        self._expect("(")
        items: list[str] = []
        while True:
            if self._name() != "FILTER_PARAMS":
                raise ContextVariableError(f"{{{self.text}}}: FILTER_GROUP takes FILTER_PARAMS...filter(...) only")
            items.append(self._filter_params())
            if self._take(")"):
                break
            self._expect(",")
        return f"{self.placeholder(lambda _: FilterGroupReference())}({', '.join(items)})"

    def _sql_utils(self) -> str:
        self._expect(".")
        name = self._name()
        if name != "convertTz" or not self._take("("):
            raise ContextVariableError(f"{{{self.text}}}: SQL_UTILS has convertTz(sql) only, as in Cube")
        argument = parse_argument(self._argument_text(), self.text)
        if argument.parameters is not None:
            raise ContextVariableError(f"{{{self.text}}}: convertTz takes the SQL of a time, not a function")
        return f"{self.placeholder(lambda _: ConvertTzReference())}({argument.column})"

    def _called(self, make: Callable[[tuple[str, ...] | None], ContextReference], argument: Argument) -> str:
        """``name(column)``, or ``name(body)`` with the function's parameters as ``name_p0``, ``name_p1``..."""
        if argument.parameters is None:
            return f"{self.placeholder(lambda _: make(None))}({argument.column})"
        count = len(argument.parameters)
        name = self.placeholder(lambda name: make(tuple(f"{name}_p{i}" for i in range(count))))
        return f"{name}({argument.body(tuple(f'{name}_p{i}' for i in range(count)))})"


# --- a call's argument: a string of SQL, or a function of the values --------------------------------------------


class Argument:
    """A ``filter()``/``convertTz()`` argument: ``column`` (SQL text), or a function's ``parameters`` and body."""

    def __init__(self, column: str, parameters: tuple[str, ...] | None = None, parts: tuple[Any, ...] = ()) -> None:
        self.column = column
        self.parameters = parameters
        self.parts = parts  # the body: text, or the index of a parameter

    def body(self, placeholders: tuple[str, ...]) -> str:
        return "".join(part if isinstance(part, str) else placeholders[part] for part in self.parts)


def parse_argument(text: str, whole: str) -> Argument:
    """A string literal (``'col'``, ``"col"``, a backtick string) or a lambda returning a string or f-string."""
    if not text:
        raise ContextVariableError(f"{{{whole}}}: filter() needs the SQL of a column or a function")
    if text.startswith("`") and text.endswith("`") and len(text) >= 2:
        inner = text[1:-1]
        if "${" in inner:
            raise ContextVariableError(f"{{{whole}}}: a template inside the argument cannot be read here")
        return Argument(inner.replace("\\`", "`"))
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise ContextVariableError(
            f'{{{whole}}}: the argument must be a string of SQL or lambda x, ...: f"...{{x}}..."'
        ) from None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return Argument(node.value)
    if isinstance(node, ast.Lambda):
        return _lambda(node, whole)
    raise ContextVariableError(f"{{{whole}}}: the argument must be a string of SQL or a lambda returning one")


def _lambda(node: ast.Lambda, whole: str) -> Argument:
    arguments = node.args
    if arguments.vararg or arguments.kwarg or arguments.kwonlyargs or arguments.defaults or arguments.posonlyargs:
        raise ContextVariableError(f"{{{whole}}}: the function takes plain parameters only (lambda x, y: ...)")
    names = [a.arg for a in arguments.args]
    body = node.body
    parts: list[Any] = []
    if isinstance(body, ast.Constant) and isinstance(body.value, str):
        parts.append(body.value)
    elif isinstance(body, ast.JoinedStr):
        for value in body.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                parts.append(value.value)
            elif isinstance(value, ast.FormattedValue) and value.conversion == -1 and value.format_spec is None:
                dotted = _dotted(value.value)
                if dotted is None:
                    raise ContextVariableError(
                        f"{{{whole}}}: inside the function's f-string write its parameters ({{x}}) or references "
                        "({CUBE}, {orders.status}) only"
                    )
                # a parameter is bound per query; any other name is a reference, resolved as in the cube's SQL
                parts.append(names.index(dotted) if dotted in names else f"{{{dotted}}}")
            else:
                raise ContextVariableError(f"{{{whole}}}: inside the function's f-string write {{x}} plainly")
    else:
        raise ContextVariableError(f"{{{whole}}}: the function must return a string or an f-string of SQL")
    return Argument("", tuple(names), tuple(parts))


def _dotted(node: ast.expr) -> str | None:
    """``x`` or ``orders.status`` written in an f-string's braces, as text; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner is not None else None
    return None


# --- where a placeholder may stand --------------------------------------------------------------------------------


def check_placeholders(tree: exp.Expr, refs: Mapping[str, Reference], source: str) -> None:
    """Refuse a context placeholder that the parse put anywhere but where its value or condition can stand."""
    calls = {n.name for n in tree.find_all(exp.Anonymous)}
    columns: dict[str, bool] = {}
    for column in tree.find_all(exp.Column):
        if not column.table:
            columns[column.name] = True
    for name, reference in refs.items():
        if not isinstance(
            reference, SecurityContextReference | FilterParamsReference | FilterGroupReference | ConvertTzReference
        ):
            continue
        value_only = isinstance(reference, SecurityContextReference) and reference.method == "unsafeValue"
        found = name in columns if value_only else name in calls
        if not found:
            raise ContextVariableError(
                f"{_written(reference)} stands where its {'value' if value_only else 'condition'} cannot: values "
                "are bound as parameters, so it cannot be part of a name or of a string literal (choose a schema "
                "or table per tenant with COMPILE_CONTEXT)"
            )
        for parameter in getattr(reference, "parameters", None) or ():
            if parameter in source and parameter not in columns:
                raise ContextVariableError(
                    f"{_written(reference)}: a parameter of the function is a bound value; write it where a value "
                    "goes ({x}, not '{x}')"
                )
    for table in tree.find_all(exp.Table):
        for part in (table.name, table.args.get("db"), table.args.get("catalog")):
            text = part.name if isinstance(part, exp.Identifier) else part
            if isinstance(text, str) and text in refs and isinstance(refs[text], SecurityContextReference):
                raise ContextVariableError(
                    f"{_written(refs[text])} cannot name a table: values are bound as parameters"
                )


def _written(reference: Reference) -> str:
    if isinstance(reference, SecurityContextReference):
        return f"SECURITY_CONTEXT.{'.'.join(reference.path)}.{reference.method}()"
    if isinstance(reference, FilterParamsReference):
        return f"FILTER_PARAMS.{reference.cube}.{reference.member}.filter()"
    if isinstance(reference, FilterGroupReference):
        return "FILTER_GROUP()"
    return "SQL_UTILS.convertTz()"
