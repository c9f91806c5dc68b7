"""``{ securityContext.x }`` expressions of access policies, evaluated without ``eval``.

An expression is parsed with Python's ``ast`` and only a small, side-effect-free subset is accepted:
the names ``securityContext`` and ``userAttributes`` (and ``groups``), attribute and constant-index access,
literals, comparisons (``== != < <= > >= in not in``), ``and``/``or``/``not`` and unary minus. Anything
else (calls, lambdas, comprehensions, arithmetic on strings...) is refused when the model compiles.

A value that is absent from the caller's context raises :class:`MissingValue`; callers treat that as a
denial, never as "no restriction" (fail closed).

Reading a claim that differs between two tokens of one viewer (``securityContext.exp``, ``iat``, ``nbf``,
``jti``) is refused too: compiled queries and results are cached per viewer without those claims
(:attr:`QueryContext.identity`), so a policy on them could be answered from another token's entry.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from embedadmin.semantic.context import VOLATILE_CLAIMS

CONTEXT_NAMES = frozenset({"securityContext", "userAttributes", "groups"})
_TEMPLATE_PART = re.compile(r"\{([^{}]*)\}")
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


class MissingValue(LookupError):
    """The expression reads something the caller's context does not have."""


@dataclass(frozen=True, slots=True)
class ContextExpression:
    """A parsed, whitelisted expression; :meth:`evaluate` runs it against a caller's context."""

    text: str
    tree: ast.expr

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        return _evaluate(self.tree, env)


@dataclass(frozen=True, slots=True)
class ContextTemplate:
    """A string value holding ``{ ... }`` expressions: a whole-value expression or an interpolation."""

    parts: tuple[str | ContextExpression, ...]

    @property
    def whole(self) -> ContextExpression | None:
        if len(self.parts) == 1 and isinstance(self.parts[0], ContextExpression):
            return self.parts[0]
        return None

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        """The value (a list stays a list) for a whole-value template, else the interpolated string."""
        if self.whole is not None:
            return self.whole.evaluate(env)
        return "".join(p if isinstance(p, str) else _as_text(p.evaluate(env)) for p in self.parts)


def compile_expression(text: str) -> ContextExpression:
    """Parse and check an expression; raises ValueError naming what is not allowed."""
    source = text.strip()
    if source.startswith("{") and source.endswith("}"):
        source = source[1:-1].strip()
    try:
        tree = ast.parse(source, mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"cannot parse expression {text!r}: {exc.msg}") from None
    _check(tree, text)
    return ContextExpression(text=text, tree=tree)


def compile_template(value: Any) -> ContextTemplate | None:
    """A :class:`ContextTemplate` for a string containing ``{...}``; None for plain values."""
    if not isinstance(value, str) or "{" not in value:
        return None
    parts: list[str | ContextExpression] = []
    position = 0
    for match in _TEMPLATE_PART.finditer(value):
        if match.start() > position:
            parts.append(value[position : match.start()])
        parts.append(compile_expression(match.group(1)))
        position = match.end()
    if position < len(value):
        parts.append(value[position:])
    return ContextTemplate(tuple(parts))


def _check(node: ast.AST, text: str) -> None:
    allowed = (
        ast.Name,
        ast.Attribute,
        ast.Subscript,
        ast.Constant,
        ast.Compare,
        ast.BoolOp,
        ast.UnaryOp,
        ast.List,
        ast.Tuple,
        ast.Load,
        ast.And,
        ast.Or,
        ast.Not,
        ast.USub,
        *(_COMPARE.keys()),
    )
    # ``securityContext`` must be followed by the claim it reads. As a whole it is the context without the
    # claims that differ between tokens of one viewer (``QueryContext.stable_security_context``), which an
    # expression could not tell from claims the token lacks.
    read_through = {id(n.value) for n in ast.walk(node) if isinstance(n, ast.Attribute | ast.Subscript)}
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and child.id == "securityContext" and id(child) not in read_through:
            raise ValueError(
                f"expression {text!r}: name the claim to read (securityContext.x); securityContext as a whole "
                "holds claims that differ between tokens of one viewer"
            )
        if not isinstance(child, allowed):
            raise ValueError(f"expression {text!r}: {type(child).__name__} is not allowed")
        if isinstance(child, ast.Name) and child.id not in CONTEXT_NAMES | {"True", "False", "None"}:
            raise ValueError(f"expression {text!r}: unknown name {child.id!r}")
        if isinstance(child, ast.Attribute) and child.attr.startswith("_"):
            raise ValueError(f"expression {text!r}: attribute {child.attr!r} is not allowed")
        if isinstance(child, ast.Subscript) and not isinstance(child.slice, ast.Constant):
            raise ValueError(f"expression {text!r}: only constant subscripts are allowed")
        claim = _security_context_claim(child)
        if claim in VOLATILE_CLAIMS:
            raise ValueError(
                f"expression {text!r}: securityContext.{claim} differs between tokens of one viewer and answers "
                "are cached per viewer; use a claim that identifies what the viewer may see"
            )


def _security_context_claim(node: ast.AST) -> Any:
    """The claim name of ``securityContext.x`` or ``securityContext["x"]``; None for anything else."""
    if not isinstance(node, ast.Attribute | ast.Subscript):
        return None
    if not (isinstance(node.value, ast.Name) and node.value.id == "securityContext"):
        return None
    return node.attr if isinstance(node, ast.Attribute) else cast(ast.Constant, node.slice).value  # checked before


def _lookup(container: Any, key: Any) -> Any:
    if isinstance(container, Mapping):
        if key not in container or container[key] is None:
            raise MissingValue(key)
        return container[key]
    if isinstance(container, list | tuple) and isinstance(key, int) and -len(container) <= key < len(container):
        return container[key]
    raise MissingValue(key)


def _evaluate(node: ast.expr, env: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return _lookup(env, node.id)
    if isinstance(node, ast.Attribute):
        return _lookup(_evaluate(node.value, env), node.attr)
    if isinstance(node, ast.Subscript):
        return _lookup(_evaluate(node.value, env), node.slice.value)  # type: ignore[attr-defined]
    if isinstance(node, ast.List | ast.Tuple):
        return [_evaluate(item, env) for item in node.elts]
    if isinstance(node, ast.UnaryOp):
        value = _evaluate(node.operand, env)
        if isinstance(node.op, ast.Not):
            return not value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise MissingValue("unary minus on a non-number")
        return -value
    if isinstance(node, ast.BoolOp):
        values = (_evaluate(v, env) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, env)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _evaluate(right_node, env)
            try:
                if not _COMPARE[type(op)](left, right):
                    return False
            except TypeError:
                raise MissingValue("values of different types") from None
            left = right
        return True
    raise MissingValue(type(node).__name__)


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
