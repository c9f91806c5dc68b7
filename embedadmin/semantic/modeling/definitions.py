"""Shared plumbing of the model compiler: problem collection, key normalisation, typed field access."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, overload

from embedadmin.semantic.errors import ModelError, ModelProblem
from embedadmin.semantic.modeling.files import YamlList, YamlMap
from embedadmin.semantic.modeling.model import SourceLocation
from embedadmin.semantic.modeling.titles import titleize

# Keys every cube, view and member may carry.
DESCRIPTIVE_KEYS = frozenset({"name", "title", "description", "public", "shown", "visible", "meta"})
NAME_PATTERN = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])([A-Z])")


class Abort(Exception):
    """Stop compiling one definition; its problem has already been recorded."""


@dataclass
class Problems:
    """Collects every fault of a model so one compile reports them all."""

    items: list[ModelProblem] = field(default_factory=list)

    def add(self, location: SourceLocation, member: str, message: str) -> None:
        self.items.append(ModelProblem(location.file, location.line, member, message))

    def fail(self, location: SourceLocation, member: str, message: str) -> Abort:
        self.add(location, member, message)
        return Abort()

    def raise_if_any(self) -> None:
        if self.items:
            raise ModelError(self.items)


def snake_key(key: Any) -> Any:
    """``sqlTable`` -> ``sql_table``: Cube accepts both spellings in YAML."""
    return _CAMEL_BOUNDARY.sub(r"_\1", key).lower() if isinstance(key, str) else key


@dataclass
class Definition:
    """One YAML mapping being compiled: its keys in snake_case and the file it came from.

    ``what`` names the member in error messages (``measure orders.revenue``).
    """

    raw: YamlMap
    file: str
    what: str
    problems: Problems
    data: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.data = {snake_key(k): v for k, v in self.raw.items()}

    @property
    def location(self) -> SourceLocation:
        return SourceLocation(self.file, getattr(self.raw, "line", 0))

    def location_of(self, key: str) -> SourceLocation:
        for raw_key in self.raw:
            if snake_key(raw_key) == key:
                return SourceLocation(self.file, self.raw.line_of(raw_key))
        return self.location

    def error(self, message: str, key: str | None = None) -> None:
        self.problems.add(self.location_of(key) if key else self.location, self.what, message)

    def fail(self, message: str, key: str | None = None) -> Abort:
        self.error(message, key)
        return Abort()

    def check_keys(self, allowed: frozenset[str], unsupported: frozenset[str] = frozenset()) -> None:
        for key in self.data:
            if key in unsupported:
                self.error(f'"{key}" is not supported by this server', key)
            elif key not in allowed:
                self.error(f'unknown property "{key}"', key)

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def string(self, key: str, *, required: bool = False) -> str | None:
        value = self.data.get(key)
        if value is None:
            if required:
                raise self.fail(f'"{key}" is required')
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.fail(f'"{key}" must be a string', key)
        return str(value)

    def boolean(self, key: str, default: bool | None = None) -> bool | None:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(f'"{key}" must be true or false', key)
        return value

    def sequence(self, key: str) -> list[Any]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(f'"{key}" must be a list', key)
        return value

    def child(self, raw: Any, what: str, key: str) -> Definition:
        """A nested mapping (a member of a cube, a granularity...) as a Definition of its own."""
        if not isinstance(raw, YamlMap):
            line = raw.line if isinstance(raw, YamlList) else self.location_of(key).line
            raise self.problems.fail(SourceLocation(self.file, line), what, f"each item of {key} must be a mapping")
        return Definition(raw, self.file, what, self.problems)


@overload
def visibility(definition: Definition, default: bool) -> bool: ...
@overload
def visibility(definition: Definition, default: None) -> bool | None: ...
def visibility(definition: Definition, default: bool | None) -> bool | None:
    """``public``, or the legacy ``shown``/``visible``, else ``default``."""
    for key in ("public", "visible", "shown"):
        value = definition.boolean(key)
        if value is not None:
            return value
    return default


def definition_name(definition: Definition, kind: str, owner: str | None = None) -> str:
    """Read and check ``name``; from then on errors name the member (``measure orders.revenue``)."""
    name = definition.string("name", required=True)
    assert name is not None
    if not NAME_PATTERN.match(name):
        raise definition.fail(f'invalid name "{name}"', "name")
    definition.what = f"{kind} {owner}.{name}" if owner else f"{kind} {name}"
    return name


def short_title(name: str, explicit: str | None) -> str:
    return explicit if explicit else titleize(name)
