"""Contract-time checks of a JSON Schema, so no payload ever meets a schema that would hang.

Size and depth limits come first (they keep the metaschema check itself bounded), then the
metaschema, then what jsonschema would only find while validating: `$ref`s that lead
nowhere, regexes Python cannot compile, and `$ref`/`allOf`/`anyOf`/`oneOf`/`not`/`if`
cycles that never consume any of the payload (validation would recurse forever). A
recursive schema that descends into the payload (a tree whose `children` refer back to
the node) is fine and supported.
"""

import re
from typing import Any

from jsonschema import SchemaError, validators

from compiler.ladder.pointer import encode
from compiler.ladder.schemaview import ref_target

_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_ONES = (
    "additionalProperties",
    "items",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "contentSchema",
)
_IN_PLACE_ONES = ("not", "if", "then", "else")
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_UNSUPPORTED = ("$dynamicRef", "$recursiveRef")

Tokens = tuple[str | int, ...]


def _children(node: dict[str, Any], path: Tokens) -> list[tuple[Any, Tokens]]:
    out: list[tuple[Any, Tokens]] = []
    for key in _MAPS:
        members = node.get(key)
        if isinstance(members, dict):
            out += [(sub, (*path, key, name)) for name, sub in members.items()]
    for key in _LISTS:
        members = node.get(key)
        if isinstance(members, list):
            out += [(sub, (*path, key, i)) for i, sub in enumerate(members)]
    for key in _ONES:
        if key in node:
            sub = node[key]
            if isinstance(sub, list):  # draft 7 tuple `items`
                out += [(s, (*path, key, i)) for i, s in enumerate(sub)]
            else:
                out.append((sub, (*path, key)))
    return out


def _inventory(
    root: Any, max_nodes: int, max_depth: int, max_properties: int
) -> tuple[dict[int, tuple[dict[str, Any], Tokens]], str | None]:
    """Every subschema by id, with its location; or the first limit it breaks."""
    found: dict[int, tuple[dict[str, Any], Tokens]] = {}
    stack: list[tuple[Any, Tokens]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, bool) or id(node) in found:  # a shared subschema is walked once
            continue
        where = encode(path) or "the root"
        if not isinstance(node, dict):
            return found, f"schema at {where} must be an object or a boolean"
        if len(path) > max_depth * 2:  # two tokens per level: "properties", name
            return found, f"schema nests deeper than {max_depth} levels at {where}"
        props = node.get("properties")
        if isinstance(props, dict) and len(props) > max_properties:
            return found, (
                f"schema at {where} declares {len(props)} properties; the limit is "
                f"{max_properties} (limits.max_schema_properties): split the entity or raise it"
            )
        found[id(node)] = (node, path)
        if len(found) > max_nodes:
            return found, (f"schema has more than {max_nodes} subschemas (limits.max_schema_nodes)")
        stack.extend(_children(node, path))
    return found, None


def _local_problems(root: Any, nodes: dict[int, tuple[dict[str, Any], Tokens]]) -> list[str]:
    problems: list[str] = []
    for node, path in nodes.values():
        where = encode(path) or "the root"
        for key in _UNSUPPORTED:
            if key in node:
                problems.append(f"{key} at {where} is not supported; use a local $ref")
        if "$id" in node and path:
            problems.append(f"nested $id at {where} is not supported (it changes $ref bases)")
        ref = node.get("$ref")
        if isinstance(ref, str):
            if not ref.startswith("#"):
                problems.append(
                    f"$ref {ref!r} at {where} is not local; only '#...' references resolve "
                    "(the ladder never fetches schemas)"
                )
            elif ref_target(root, ref) is None:
                problems.append(f"$ref {ref!r} at {where} does not resolve to a schema")
        regexes = list(node.get("patternProperties", {}) or {})
        if isinstance(node.get("pattern"), str):
            regexes.append(node["pattern"])
        for regex in regexes:
            try:
                re.compile(regex)
            except re.error as exc:
                problems.append(f"pattern {regex!r} at {where} does not compile: {exc}")
    return problems


def _in_place(root: Any, node: dict[str, Any]) -> list[Any]:
    """Subschemas that apply to the same instance as `node` (no payload consumed)."""
    out: list[Any] = []
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = ref_target(root, ref)
        if target is not None:
            out.append(target)
    for key in _IN_PLACE_LISTS:
        members = node.get(key)
        if isinstance(members, list):
            out += members
    out += [node[k] for k in _IN_PLACE_ONES if k in node]
    dependent = node.get("dependentSchemas")
    if isinstance(dependent, dict):
        out += list(dependent.values())
    return [s for s in out if isinstance(s, dict)]


def _cycle(root: Any, nodes: dict[int, tuple[dict[str, Any], Tokens]]) -> str | None:
    """The first in-place cycle (as pointers), found by an iterative depth-first search."""
    state: dict[int, int] = {}  # 1 = on the current path, 2 = done
    for start_id, (start, _) in nodes.items():
        if state.get(start_id):
            continue
        path_nodes = [start]
        stack = [iter(_in_place(root, start))]
        state[start_id] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                state[id(path_nodes.pop())] = 2
                continue
            mark = state.get(id(nxt))
            if mark == 1:
                ring = path_nodes[[id(n) for n in path_nodes].index(id(nxt)) :] + [nxt]
                names = ["#" + encode(nodes[id(n)][1]) if id(n) in nodes else "?" for n in ring]
                return " -> ".join(names)
            if mark is None:
                state[id(nxt)] = 1
                path_nodes.append(nxt)
                stack.append(iter(_in_place(root, nxt)))
    return None


def check_schema(root: Any, *, max_nodes: int, max_depth: int, max_properties: int) -> list[str]:
    """Return every problem found in a contract schema (an empty list means usable)."""
    nodes, limit = _inventory(root, max_nodes, max_depth, max_properties)
    if limit:
        return [limit]
    cls = validators.validator_for(root, default=validators.Draft202012Validator)
    try:
        cls.check_schema(root)
    except SchemaError as exc:
        where = encode(tuple(exc.absolute_path)) or "the root"
        return [f"not a valid JSON Schema at {where}: {exc.message}"]
    except RecursionError:
        return ["the schema object contains itself (a cycle of Python objects, not of $refs)"]
    problems = _local_problems(root, nodes)
    if problems:
        return problems
    cycle = _cycle(root, nodes)
    if cycle:
        return [
            f"circular schema: {cycle} refer to each other without descending into the "
            "payload, so validation would never end"
        ]
    return []
