"""A read-only view of a contract's JSON Schema that the stages walk alongside the payload.

Only what a stage needs to know about a position is exposed: declared properties, what
array items look like, the allowed JSON types, enum members and defaults. `$ref` (local
only) and `allOf` are folded in; `anyOf`/`oneOf` are left to jsonschema, so a stage never
guesses which branch a value belongs to. The contract checks the schema (see
`schemacheck`) before a view is built, so `$ref` chains here always end.
"""

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator, validators

from compiler.jsontypes import json_type
from compiler.ladder.pointer import WILDCARD, Path, Token, decode

SchemaNode = dict[str, Any] | bool
_PCT = re.compile(r"%([0-9A-Fa-f]{2})")
# Applicators whose annotations depend on which branch holds: a key they might evaluate
# cannot be judged "unevaluated" without running the validator.
_BRANCHES = ("anyOf", "oneOf", "if", "then", "else", "dependentSchemas", "$dynamicRef")


@dataclass(frozen=True)
class Shape:
    """Everything the stages use about one schema position, merged over `$ref` and `allOf`."""

    types: frozenset[str]
    properties: dict[str, SchemaNode]
    required: tuple[str, ...]
    additional: SchemaNode | None
    patterns: tuple[tuple[re.Pattern[str], SchemaNode], ...]
    items: SchemaNode | None
    prefix_items: tuple[SchemaNode, ...]
    enum: tuple[Any, ...] | None
    default: tuple[Any, ...] = field(default=())  # () = no default, (value,) = has one
    # unevaluatedProperties: false applies here, and every key it could let through is
    # known (no anyOf/oneOf/if/dependentSchemas branch could evaluate another one)
    closed_unevaluated: bool = False


def type_allows(types: frozenset[str], value: Any) -> bool:
    """Whether a value's JSON type is among `types` (an empty set allows every type)."""
    if not types:
        return True
    kind = json_type(value)
    return kind in types or (kind == "integer" and "number" in types)


def ref_target(root: SchemaNode, ref: str) -> SchemaNode | None:
    """Resolve a local `$ref` ("#", "#/$defs/x") inside `root`; None when it leads nowhere."""
    if not ref.startswith("#"):
        return None
    fragment = _PCT.sub(lambda m: chr(int(m.group(1), 16)), ref[1:])
    if fragment and not fragment.startswith("/"):
        return None
    node: Any = root
    for token in decode(fragment):
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node if isinstance(node, (dict, bool)) else None


class SchemaView:
    """Cached, merged shapes of the positions of one (already checked) schema."""

    def __init__(self, root: SchemaNode) -> None:
        self.root = root
        keywords = validators.validator_for(root, default=Draft202012Validator).VALIDATORS
        self._unevaluated = "unevaluatedProperties" in keywords  # 2019-09 and later
        self._shapes: dict[int, Shape] = {}
        self._keep: list[SchemaNode] = []  # nodes whose ids key the cache stay alive
        self._memo: dict[Any, Any] = {}

    def memo(self, key: Any, build: Callable[[], Any]) -> Any:
        """A value derived from this schema, computed once (keys name what they derive)."""
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]

    def shape(self, node: SchemaNode) -> Shape:
        """The merged shape of a schema position (memoised per node)."""
        cached = self._shapes.get(id(node))
        if cached is None:
            cached = self._build(node)
            self._shapes[id(node)] = cached
            self._keep.append(node)
        return cached

    def _parts(self, node: SchemaNode) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        pending: list[SchemaNode] = [node]
        seen: set[int] = set()
        while pending:
            current = pending.pop()
            if not isinstance(current, dict) or id(current) in seen:
                continue
            seen.add(id(current))
            parts.append(current)
            ref = current.get("$ref")
            if isinstance(ref, str):
                target = ref_target(self.root, ref)
                if target is not None:
                    pending.append(target)
            pending.extend(reversed(current.get("allOf", [])))
        return parts

    def _build(self, node: SchemaNode) -> Shape:
        parts = self._parts(node)
        types: frozenset[str] | None = None
        props: dict[str, SchemaNode] = {}
        required: list[str] = []
        additional: SchemaNode | None = None
        patterns: list[tuple[re.Pattern[str], SchemaNode]] = []
        items: SchemaNode | None = None
        prefix: tuple[SchemaNode, ...] = ()
        enum: tuple[Any, ...] | None = None
        default: tuple[Any, ...] = ()
        unevaluated = branching = False
        for part in parts:
            unevaluated = unevaluated or part.get("unevaluatedProperties") is False
            branching = branching or any(k in part for k in _BRANCHES)
            if "type" in part:
                declared = part["type"]
                these = frozenset([declared] if isinstance(declared, str) else declared)
                types = these if types is None else types & these
            for key, sub in part.get("properties", {}).items():
                props.setdefault(key, sub)
            required += [r for r in part.get("required", []) if r not in required]
            if "additionalProperties" in part and additional is not False:
                additional = part["additionalProperties"]
            patterns += [(re.compile(p), s) for p, s in part.get("patternProperties", {}).items()]
            raw_items = part.get("items")
            if isinstance(raw_items, list):  # draft 7 tuple form
                prefix = prefix or tuple(raw_items)
                items = part.get("additionalItems", items)
            elif raw_items is not None:
                items = raw_items
            prefix = prefix or tuple(part.get("prefixItems", ()))
            if "enum" in part and enum is None:
                enum = tuple(part["enum"])
            if "const" in part and enum is None:
                enum = (part["const"],)
            if "default" in part and not default:
                default = (part["default"],)
        return Shape(
            types=types or frozenset(),
            properties=props,
            required=tuple(required),
            additional=additional,
            patterns=tuple(patterns),
            items=items,
            prefix_items=prefix,
            enum=enum,
            default=default,
            closed_unevaluated=self._unevaluated and unevaluated and not branching,
        )

    def child(
        self, node: SchemaNode, key: str, *, declared_only: bool = False
    ) -> SchemaNode | None:
        """The schema of property `key` of an object at `node` (None: the schema says nothing).

        With `declared_only`, an `additionalProperties` schema does not count: only keys named
        in `properties` or matched by `patternProperties` are "defined by the schema".
        """
        shape = self.shape(node)
        if key in shape.properties:
            return shape.properties[key]
        for pattern, sub in shape.patterns:
            if pattern.search(key):
                return sub
        if not declared_only and isinstance(shape.additional, dict):
            return shape.additional
        return None

    def item(self, node: SchemaNode, index: int) -> SchemaNode | None:
        """The schema of element `index` of an array at `node` (None: the schema says nothing)."""
        shape = self.shape(node)
        if index < len(shape.prefix_items):
            return shape.prefix_items[index]
        return shape.items if isinstance(shape.items, dict) else None

    def allows_key(self, node: SchemaNode, key: str) -> bool:
        """Whether the schema lets an object at `node` carry `key` at all."""
        shape = self.shape(node)
        if key in shape.properties or any(p.search(key) for p, _ in shape.patterns):
            return True
        if shape.additional is not None:
            return shape.additional is not False
        return not shape.closed_unevaluated

    def locate(self, tokens: Sequence[Token]) -> SchemaNode | None:
        """The schema position a payload path (or a pattern with "*") lands on, if defined.

        Object members must be declared (`properties`/`patternProperties`); array elements
        take the `items`/`prefixItems` schema. None when the schema does not define the path.
        """
        node: SchemaNode | None = self.root
        for token in tokens:
            if node is None:
                return None
            shape = self.shape(node)
            is_index = isinstance(token, int) or token == WILDCARD or str(token).isdigit()
            if is_index and (shape.items is not None or shape.prefix_items):
                if token == WILDCARD:
                    node = shape.items if isinstance(shape.items, dict) else None
                else:
                    node = self.item(node, int(token))
            else:
                node = self.child(node, str(token), declared_only=True)
        return node


Visit = Callable[[Path, Any, SchemaNode], None]


def walk(value: Any, view: SchemaView, visit: Visit, *, start: SchemaNode | None = None) -> None:
    """Visit every object and array the schema describes, parents before children.

    `visit(path, container, schema)` may change the container's members in place; the walk
    then descends into the members as they are after the visit. Iterative, so payload depth
    is bounded only by the intake limit, never by Python's recursion limit.
    """
    stack: list[tuple[Path, Any, SchemaNode]] = [((), value, view.root if start is None else start)]
    while stack:
        path, current, node = stack.pop()
        visit(path, current, node)
        children: list[tuple[Path, Any, SchemaNode]] = []
        if isinstance(current, dict):
            for key, member in current.items():
                if isinstance(member, (dict, list)):
                    sub = view.child(node, key)
                    if sub is not None:
                        children.append(((*path, key), member, sub))
        elif isinstance(current, list):
            for index, member in enumerate(current):
                if isinstance(member, (dict, list)):
                    sub = view.item(node, index)
                    if sub is not None:
                        children.append(((*path, index), member, sub))
        stack.extend(reversed(children))


def iter_paths(value: Any, pattern: Sequence[str]) -> Iterator[tuple[Path, Any, str]]:
    """Yield (parent path, parent container, last token) for each place a pattern matches.

    "*" in the pattern matches every index of an array. The last token is returned unresolved
    so callers can add a member that does not exist yet; parents must exist.
    """
    if not pattern:
        return
    frontier: list[tuple[Path, Any]] = [((), value)]
    for token in pattern[:-1]:
        nxt: list[tuple[Path, Any]] = []
        for path, current in frontier:
            if isinstance(current, list) and token == WILDCARD:
                nxt += [((*path, i), v) for i, v in enumerate(current)]
            elif isinstance(current, list) and token.isdigit() and int(token) < len(current):
                nxt.append(((*path, int(token)), current[int(token)]))
            elif isinstance(current, dict) and token in current:
                nxt.append(((*path, token), current[token]))
        frontier = nxt
    last = pattern[-1]
    for path, current in frontier:
        if isinstance(current, list) and last == WILDCARD:
            for i in range(len(current)):
                yield path, current, str(i)
        elif isinstance(current, (dict, list)):
            yield path, current, last
