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
