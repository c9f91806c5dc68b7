"""The join graph: checks at compile time, connected components for meta, join trees for queries.

Joins are directed (from the cube that declares them). A query's join tree is found as Cube finds it:
for each candidate root (the query's cubes in order of first use) take the shortest directed path from the
root to every other cube (join hints, such as a view's ``join_path``, are followed step by step); keep the
tree with the fewest joins, the earliest root winning ties. A cube is *multiplied* when some join of the
tree, walking away from it, can return several rows per row of it (``hasMany`` forwards, ``belongsTo``
backwards); measures of a multiplied cube need fan-out-safe SQL.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from embedadmin.semantic.errors import QueryError
from embedadmin.semantic.modeling.model import CompiledModel, Entity, Join, SourceLocation

JoinHint = str | tuple[str, ...]
_MULTIPLIED_TYPES = frozenset({"sum", "avg", "count", "number"})
_TREE_CACHE_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class JoinEdge:
    source: str
    target: str
    join: Join


@dataclass(frozen=True, slots=True)
class JoinTree:
    root: str
    edges: tuple[JoinEdge, ...]
    multiplied: frozenset[str]

    @property
    def cubes(self) -> tuple[str, ...]:
        return (self.root, *(edge.target for edge in self.edges))


def join_problems(
    cubes: Mapping[str, Entity], joins: Mapping[str, Mapping[str, Join]]
) -> list[tuple[SourceLocation, str, str]]:
    """Joins whose cubes lack the primary key that fan-out-safe aggregation needs (Cube's own rule)."""
    problems = []
    for source, targets in joins.items():
        for target, join in targets.items():
            for cube in dict.fromkeys((source, target)):
                if not cubes[cube].primary_keys and _has_additive_measures(cubes[cube]):
                    problems.append(
                        (
                            join.location,
                            f"join {source}.{target}",
                            f"primary key for '{cube}' is required when join is defined "
                            "in order to make aggregates work properly",
                        )
                    )
    return problems


def _has_additive_measures(cube: Entity) -> bool:
    return any(
        m.type in _MULTIPLIED_TYPES or (m.sql is not None and m.sql.text.strip().lower() == "count(*)")
        for m in cube.measures.values()
    )


def connected_components(entities: Mapping[str, Entity], joins: Mapping[str, Mapping[str, Join]]) -> dict[str, int]:
    """Cube's numbering: walk cubes that declare joins, in order; the counter moves on at each of them."""
    neighbours: dict[str, list[str]] = {}
    for source, targets in joins.items():
        for target in targets:
            neighbours.setdefault(source, []).append(target)
            neighbours.setdefault(target, []).append(source)
    components: dict[str, int] = {}
    component = 1
    for name in entities:
        if not joins.get(name):
            continue
        stack = [name]
        while stack:
            node = stack.pop()
            if node in components:
                continue
            components[node] = component
            stack.extend(neighbours.get(node, ()))
        component += 1
    return components


def build_join_tree(model: CompiledModel, hints: Sequence[JoinHint]) -> JoinTree:
    """The join tree for cubes (and join-path hints) in order of first use; cached per model."""
    key = tuple(hints)
    cache: dict[tuple[JoinHint, ...], JoinTree] = model.caches.setdefault("join_trees", {})
    tree = cache.get(key)
    if tree is None:
        tree = _build(model, key)
        if len(cache) < _TREE_CACHE_LIMIT:
            cache[key] = tree
    return tree


def _build(model: CompiledModel, hints: tuple[JoinHint, ...]) -> JoinTree:
    candidates: list[tuple[str, tuple[JoinEdge, ...]]] = []
    for index, hint in enumerate(hints):
        root = hint if isinstance(hint, str) else hint[0]
        others = [*hints[:index], *hints[index + 1 :]]
        if not isinstance(hint, str) and len(hint) > 1:
            others.insert(0, hint[1:])
        edges = _tree_for_root(model, root, others)
        if edges is not None:
            candidates.append((root, edges))
    if not candidates:
        names = ", ".join(f"'{_last(h)}'" for h in hints)
        raise QueryError(f"Can't find join path to join {names}")
    root, edges = min(candidates, key=lambda c: len(c[1]))
    return JoinTree(root=root, edges=edges, multiplied=_multiplied_cubes(root, edges))


def _last(hint: JoinHint) -> str:
    return hint if isinstance(hint, str) else hint[-1]


def _tree_for_root(model: CompiledModel, root: str, hints: list[JoinHint]) -> tuple[JoinEdge, ...] | None:
    joined = {root}
    edges: list[JoinEdge] = []
    for hint in hints:
        steps = (hint,) if isinstance(hint, str) else hint
        previous = root
        for step in steps:
            if step == previous:
                continue
            if step in joined:
                previous = step
                continue
            path = _shortest_path(model, previous, step)
            if path is None:
                return None
            for source, target in itertools.pairwise(path):
                if target not in joined:
                    edges.append(JoinEdge(source, target, model.joins[source][target]))
                    joined.add(target)
            previous = step
    return tuple(edges)


def _shortest_path(model: CompiledModel, start: str, goal: str) -> list[str] | None:
    previous: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            path = [node]
            while previous[path[-1]] is not None:
                path.append(previous[path[-1]])  # type: ignore[arg-type]
            return path[::-1]
        for target in model.joins.get(node, {}):
            if target not in previous:
                previous[target] = node
                queue.append(target)
    return None


def _multiplied_cubes(root: str, edges: tuple[JoinEdge, ...]) -> frozenset[str]:
    cubes = [root, *(e.target for e in edges)]
    return frozenset(cube for cube in cubes if _is_multiplied(cube, edges))


def _is_multiplied(cube: str, edges: tuple[JoinEdge, ...]) -> bool:
    visited = {cube}
    stack = [cube]
    while stack:
        current = stack.pop()
        for edge in edges:
            if current not in (edge.source, edge.target):
                continue
            other = edge.target if edge.source == current else edge.source
            if other in visited:
                continue
            forward_many = edge.source == current and edge.join.relationship == "hasMany"
            backward_many = edge.target == current and edge.join.relationship == "belongsTo"
            if forward_many or backward_many:
                return True
            visited.add(other)
            stack.append(other)
    return False
