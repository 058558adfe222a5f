"""Step graph helpers: cycle detection with the cycle's path, stable topological order."""

import heapq
from collections.abc import Mapping, Sequence


def find_cycle(order: Sequence[str], deps: Mapping[str, Sequence[str]]) -> list[str] | None:
    """Return one cycle as a closed path (a -> b -> a), or None; iterative, deterministic."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    for root in order:
        if root in state:
            continue
        path: list[str] = []
        stack: list[tuple[str, int]] = [(root, 0)]
        while stack:
            node, i = stack.pop()
            if i == 0:
                state[node] = 1
                path.append(node)
            children = [d for d in deps.get(node, ()) if d in deps]
            if i < len(children):
                stack.append((node, i + 1))
                child = children[i]
                if state.get(child) == 1:
                    return [*path[path.index(child) :], child]
                if child not in state:
                    stack.append((child, 0))
            else:
                state[node] = 2
                path.pop()
    return None


def topological(order: Sequence[str], deps: Mapping[str, Sequence[str]]) -> list[str]:
    """Kahn's algorithm; among ready steps the earlier one in `order` goes first."""
    position = {k: i for i, k in enumerate(order)}
    pending = {k: sum(1 for d in set(deps.get(k, ())) if d in position) for k in order}
    children: dict[str, list[str]] = {k: [] for k in order}
    for k in order:
        for d in set(deps.get(k, ())):
            if d in children:
                children[d].append(k)
    ready = [(position[k], k) for k in order if pending[k] == 0]
    heapq.heapify(ready)
    out: list[str] = []
    while ready:
        _, k = heapq.heappop(ready)
        out.append(k)
        for c in children[k]:
            pending[c] -= 1
            if pending[c] == 0:
                heapq.heappush(ready, (position[c], c))
    return out


def ancestors(order: Sequence[str], deps: Mapping[str, Sequence[str]]) -> dict[str, frozenset[str]]:
    """Every step's transitive dependencies; `order` must be topological."""
    result: dict[str, frozenset[str]] = {}
    for k in order:
        acc: set[str] = set()
        for d in deps.get(k, ()):
            if d in result:
                acc.add(d)
                acc |= result[d]
        result[k] = frozenset(acc)
    return result


class Ancestors:
    """Transitive dependencies, computed for a step only when a direct-edge check is not enough.

    Binding an input almost always names a direct dependency; building every step's full
    ancestor set up front would make Pass C quadratic in plan length for nothing.
    """

    def __init__(self, deps: Mapping[str, Sequence[str]]) -> None:
        self._deps = deps
        self._memo: dict[str, frozenset[str]] = {}

    def full(self, key: str) -> frozenset[str]:
        stack = [key]
        while stack:
            node = stack[-1]
            if node in self._memo:
                stack.pop()
                continue
            missing = [
                d for d in self._deps.get(node, ()) if d in self._deps and d not in self._memo
            ]
            if missing:
                stack.extend(missing)
                continue
            acc: set[str] = set()
            for d in self._deps.get(node, ()):
                if d in self._memo:
                    acc.add(d)
                    acc |= self._memo[d]
            self._memo[node] = frozenset(acc)
            stack.pop()
        return self._memo[key]

    def of(self, key: str) -> "Upstream":
        return Upstream(self, key, frozenset(self._deps.get(key, ())))


class Upstream:
    """`x in upstream`: is x a (transitive) dependency of one step?"""

    def __init__(self, ancestors: Ancestors, key: str, direct: frozenset[str]) -> None:
        self._ancestors = ancestors
        self._key = key
        self.direct = direct

    def __contains__(self, step_key: object) -> bool:
        if step_key in self.direct:
            return True
        return isinstance(step_key, str) and step_key in self._ancestors.full(self._key)
