"""Schema -> nodes: the recursive traversal (refs, allOf, oneOf/anyOf, objects, arrays, leaves).

Recursion is guarded three ways: a `$ref` already being expanded on the current path becomes
`{REF: circular}`; more than `max_depth` nested reference expansions become `{REF: max_depth}`;
and structural nesting, node count, property count and enum size have hard limits (limits.py).
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from compiler.imprint.arrays import build_array
from compiler.imprint.choice import build_choice
from compiler.imprint.errors import TemplateError, pointer_child, unsatisfiable
from compiler.imprint.leaf import fits_type, make_leaf, schema_types
from compiler.imprint.limits import MAX_NESTING, MAX_TEMPLATE_NODES, REF_NODE_BUDGET
from compiler.imprint.merge import CircularMerge, merge_all_of
from compiler.imprint.nodes import Embedded, Leaf, Node, OneOf, RefMark
from compiler.imprint.objects import build_object
from compiler.imprint.refs import ANNOTATIONS, JSON_SCHEMA, OAS31, Resolver, dialect_of
from compiler.imprint.tokens import REF_CIRCULAR, REF_MAX_DEPTH, Token

JSON_MEDIA = ("application/json", "text/json")


@dataclass(frozen=True, slots=True)
class Pos:
    """Where the traversal is: schema pointer, requiredness, expansion stack and depths."""

    where: str
    required: bool
    refs: tuple[str, ...] = ()
    depth: int = 0
    ref_depth: int = 0
    # The schema objects on the path, held (not their id()s): a temporary dict built for an
    # allOf merge could be freed and its id() reused by another, which would look like a cycle.
    path: tuple[object, ...] = ()
    origin: str | None = None  # pointer this schema was reached through (discriminator names)
    implied: tuple[str, str] | None = None  # (discriminator property, value) forced by a parent


class Compiler:
    """Compiles schemas of one document into nodes; reused to expand `{REF: ...}` on demand."""

    def __init__(self, schema: Any, document: Mapping[str, Any] | None, max_depth: int = 8) -> None:
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0:
            raise TemplateError(
                "argument", "max_depth", f"must be an integer >= 0, got {max_depth!r}", "fix it"
            )
        if document is not None and not isinstance(document, Mapping):
            raise TemplateError(
                "argument",
                "document",
                f"must be a JSON object (dict), got {type(document).__name__}",
                "pass the parsed OpenAPI/JSON Schema document",
            )
        if not isinstance(schema, dict) and schema is not True:
            raise TemplateError(
                "schema",
                "#",
                f"a schema must be a JSON object, got {type(schema).__name__}",
                "pass the schema object (e.g. a requestBody's schema)",
            )
        if (
            isinstance(schema, dict)
            and "paths" in schema
            and ("openapi" in schema or "swagger" in schema)
        ):
            raise TemplateError(
                "schema",
                "#",
                "this is a whole OpenAPI document, not a schema",
                "use operation_template(document, method, path), or pass one schema",
            )
        root: Mapping[str, Any] = {}
        if document is not None:
            root = document
        elif isinstance(schema, dict):
            root = schema
        self.resolver = Resolver(root, dialect_of(root))
        self.max_depth = max_depth
        self.nodes = 0
        self._expanded: dict[tuple[str, bool], Node] = {}

    def compile(self, schema: Any, where: str = "#", *, required: bool = True) -> Node:
        """Compile one schema (found at `where` in the document) into its node tree."""
        root = self.node(schema, Pos(where=where, required=required))
        if isinstance(root, RefMark) and root.marker == REF_CIRCULAR:
            raise TemplateError(
                "ref",
                where,
                f"the schema consists only of a reference back to itself ({root.pointer})",
                "give the schema some content besides the self-reference",
            )
        return root

    def expand(self, mark: RefMark) -> Node:
        """Compile the target of a `{REF: ...}` marker the model chose to fill."""
        key = (mark.pointer, mark.required)
        if key not in self._expanded:
            _, target = self.resolver.resolve(mark.pointer, mark.pointer)
            pos = Pos(where=mark.pointer, required=mark.required, refs=(mark.pointer,))
            spent, self.nodes = self.nodes, 0  # each expansion has a node budget of its own
            try:
                self._expanded[key] = self.node(target, replace(pos, ref_depth=1))
            finally:
                self.nodes = spent
        return self._expanded[key]

    def node(self, schema: Any, pos: Pos) -> Node:
        """Compile `schema` at `pos`."""
        self.nodes += 1
        if self.nodes > MAX_TEMPLATE_NODES:
            raise TemplateError(
                "limit",
                pos.where,
                f"the template would exceed {MAX_TEMPLATE_NODES} nodes of inline schema",
                "template a smaller part of the schema (e.g. one property's schema), or move "
                "repeated inline parts into $refs, which stop at {REF: max_depth} when large",
            )
        if pos.depth > MAX_NESTING:
            raise TemplateError(
                "limit",
                pos.where,
                f"schema nested deeper than {MAX_NESTING} levels",
                "flatten the schema or reference the deep part separately",
            )
        if schema is True:
            schema = {}
        if schema is False:
            raise unsatisfiable(pos.where, "the schema is false")
        if not isinstance(schema, dict):
            raise TemplateError(
                "schema",
                pos.where,
                f"a schema must be a JSON object, got {schema!r:.60}",
                "fix the schema (false allows no value at all)",
            )
        if any(seen is schema for seen in pos.path):
            raise TemplateError(
                "schema", pos.where, "the schema object contains itself", "break the cycle"
            )
        pos = replace(pos, path=(*pos.path, schema))
        if "$ref" in schema:
            return self._ref(schema, pos)
        if "allOf" in schema:
            try:
                merged, used = merge_all_of(schema, self.resolver, pos.where, pos.refs)
            except CircularMerge as circular:
                return RefMark(REF_CIRCULAR, circular.pointer, pos.required)
            if used:
                fresh = tuple(p for p in used if p not in pos.refs)
                pos = replace(pos, refs=(*pos.refs, *fresh), ref_depth=pos.ref_depth + 1)
            schema = merged
        return self._typed(schema, pos)

    def _ref(self, schema: dict[str, Any], pos: Pos) -> Node:
        siblings = {k: v for k, v in schema.items() if k != "$ref" and k not in ANNOTATIONS}
        siblings = {k: v for k, v in siblings.items() if not k.startswith("x-")}
        if siblings and self.resolver.dialect in (OAS31, JSON_SCHEMA):
            # 2019+ semantics: keywords beside $ref apply too.
            return self.node({"allOf": [{"$ref": schema["$ref"]}, siblings]}, pos)
        pointer, target = self.resolver.resolve(schema["$ref"], pos.where)
        if pointer in pos.refs:
            return RefMark(REF_CIRCULAR, pointer, pos.required)
        if pos.ref_depth >= self.max_depth or self.nodes >= REF_NODE_BUDGET:
            # Too deep, or the template is already large: filled on demand, like recursion.
            return RefMark(REF_MAX_DEPTH, pointer, pos.required)
        inner = replace(
            pos,
            where=pointer,
            refs=(*pos.refs, pointer),
            ref_depth=pos.ref_depth + 1,
            origin=pointer,
        )
        return self.node(target, inner)

    def _typed(self, schema: dict[str, Any], pos: Pos) -> Node:
        if "oneOf" in schema or "anyOf" in schema:
            return build_choice(self, schema, pos)
        types, nullable = schema_types(schema, self.resolver.dialect, pos.where)
        if len(types) > 1 and isinstance(schema.get("enum"), list):
            types = [t for t in types if any(fits_type(v, t) for v in schema["enum"])] or types
        if len(types) > 1:
            alts = self.satisfiable(
                ({**schema, "type": t, "nullable": False, "x-nullable": False} for t in types), pos
            )
            if nullable:
                alts.append(self.null_leaf(pos))
            if not alts:
                raise unsatisfiable(pos.where, f"none of the types {types} can be satisfied")
            return alts[0] if len(alts) == 1 else OneOf(tuple(alts))
        schema_type = types[0] if types else "null" if nullable else None
        nullable = nullable and schema_type != "null"
        if schema_type == "object" and _structured_object(schema):
            return build_object(self, schema, pos, nullable)
        if schema_type == "array":
            array = build_array(self, schema, pos, nullable)
            if array is not None:
                return array
        if schema_type == "string" and _carries_json(schema) and schema.get("readOnly") is not True:
            inner_schema = schema.get("contentSchema", schema.get("x-content-schema", {}))
            at = pointer_child(pos.where, "contentSchema")
            inner = self.node(inner_schema, Pos(at, True, pos.refs, pos.depth + 1, pos.ref_depth))
            return Embedded(inner, pos.required, nullable)
        return make_leaf(
            schema,
            schema_type,
            nullable,
            required=pos.required,
            where=pos.where,
            dialect=self.resolver.dialect,
        )

    def satisfiable(self, schemas: Iterable[Any], pos: Pos) -> list[Node]:
        """Compile each schema at `pos`, leaving out those no value can satisfy."""
        out: list[Node] = []
        for schema in schemas:
            try:
                out.append(self.node(schema, pos))
            except TemplateError as err:
                if err.reason != "unsatisfiable":
                    raise
        return out

    def null_leaf(self, pos: Pos) -> Leaf:
        """The `{FILL|null}` alternative that makes a choice nullable."""
        kind = "FILL" if pos.required else "OPTIONAL"
        return Leaf(Token(kind=kind, type="null"), pos.required, "null")


def _structured_object(schema: dict[str, Any]) -> bool:
    """True unless the object is free-form (no declared shape): then it is one token."""
    if any(k in schema for k in ("properties", "patternProperties", "required")):
        return True
    extra = schema.get("additionalProperties", schema.get("unevaluatedProperties"))
    return extra is False or isinstance(extra, dict)


def _carries_json(schema: dict[str, Any]) -> bool:
    media = schema.get("contentMediaType")
    if isinstance(media, str) and media.split(";")[0].strip().lower() in JSON_MEDIA:
        return True
    return schema.get("x-serialization") == "json"
