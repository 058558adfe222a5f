"""Hypothesis strategies for schemas: objects, arrays, enums, nullable, oneOf/anyOf/allOf, maps,
formats, ranges, embedded JSON and recursive $refs, in JSON Schema 2020-12 and OpenAPI 3.0.

Every generated schema is satisfiable, and every oneOf has mutually exclusive alternatives
(different JSON types, or objects told apart by a required single-value `kind`), so that a
payload built from one alternative is valid under exactly one.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

OAS30 = "oas30"
JSON_2020 = "2020-12"
NAMES = st.sampled_from(
    ["id", "name", "with space", "a|b", "ünï", "x-y", "count", "tags", "value", "n0"]
)
ENUM_TEXT = st.sampled_from(["a|b", "back\\slash", "plain", "with space", "", "ß", "x:y"])
PATTERNS = st.sampled_from(["^[a-z]{2,5}$", "^(ab|cd)+$", "^[A-Z]{2}-[0-9]{3}$", "z"])
FORMATS = st.sampled_from(["uuid", "date-time", "date", "email", "ipv4"])


def _nullable(schema: dict[str, Any], dialect: str) -> dict[str, Any]:
    if dialect == OAS30:
        return {**schema, "nullable": True}
    return {**schema, "type": [schema["type"], "null"]}


@st.composite
def strings(draw: st.DrawFn) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    flavour = draw(st.sampled_from(["plain", "format", "pattern", "length"]))
    if flavour == "format":
        schema["format"] = draw(FORMATS)
    elif flavour == "pattern":
        schema["pattern"] = draw(PATTERNS)
    elif flavour == "length":
        low = draw(st.integers(0, 3))
        schema.update(minLength=low, maxLength=low + draw(st.integers(0, 6)))
    return schema


@st.composite
def integers(draw: st.DrawFn, dialect: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    low = draw(st.none() | st.integers(-1000, 1000))
    high = None if low is None else low + draw(st.integers(12, 500))
    exclusive = draw(st.booleans())
    if low is not None and high is not None:
        if dialect == OAS30:
            schema.update(minimum=low, maximum=high, exclusiveMinimum=exclusive)
        elif exclusive:
            schema.update(exclusiveMinimum=low, maximum=high)
        else:
            schema.update(minimum=low, exclusiveMaximum=high)
    if draw(st.booleans()):
        schema["multipleOf"] = draw(st.sampled_from([1, 2, 3, 5]))
    if draw(st.booleans()):
        schema["format"] = draw(st.sampled_from(["int32", "int64"]))
    return schema


@st.composite
def numbers(draw: st.DrawFn, dialect: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "number"}
    if draw(st.booleans()):
        low = draw(st.floats(-1e6, 1e6, allow_nan=False))
        high = low + draw(st.floats(1.0, 1e6))
        if dialect == OAS30:
            schema.update(minimum=low, maximum=high, exclusiveMaximum=draw(st.booleans()))
        else:
            schema.update(exclusiveMinimum=low, maximum=high)
    elif draw(st.booleans()):
        schema["multipleOf"] = draw(st.sampled_from([0.5, 0.25, 2]))
    return schema


@st.composite
def enums(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.booleans()):
        values = draw(st.lists(ENUM_TEXT, min_size=2, max_size=5, unique=True))
        return {"type": "string", "enum": values}
    values = draw(st.lists(st.integers(-5, 50), min_size=2, max_size=5, unique=True))
    return {"type": "integer", "enum": values}


def scalars(dialect: str) -> st.SearchStrategy[dict[str, Any]]:
    base = st.one_of(
        strings(),
        integers(dialect),
        numbers(dialect),
        enums(),
        st.just({"type": "boolean"}),
    )
    extra = [st.just({"type": "null"}), st.builds(lambda v: {"const": v}, ENUM_TEXT)]
    if dialect != OAS30:
        base = base | st.one_of(*extra)
    nullable = st.one_of(strings(), integers(dialect), st.just({"type": "boolean"})).map(
        lambda s: _nullable(s, dialect)
    )
    return base | nullable


def _extend(dialect: str):  # type: ignore[no-untyped-def]
    def extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
        return st.one_of(
            objects(children),
            arrays(children),
            st.builds(lambda c: {"type": "object", "additionalProperties": c}, children),
            st.builds(
                lambda c: {
                    "type": "object",
                    "patternProperties": {"^x-": c},
                    "additionalProperties": False,
                },
                children,
            ),
            tagged_one_of(children, dialect),
            st.just({"oneOf": [{"type": "string"}, {"type": "boolean"}, {"type": "integer"}]}),
            st.builds(lambda a, b: {"anyOf": [a, b]}, children, children),
            all_of(children),
            embedded(children, dialect),
        )

    return extend


@st.composite
def objects(draw: st.DrawFn, children: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    props = draw(st.dictionaries(NAMES, children, max_size=4))
    required = [n for n in props if draw(st.booleans())]
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    if draw(st.booleans()):
        schema["additionalProperties"] = False
    return schema


@st.composite
def arrays(draw: st.DrawFn, children: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    if draw(st.integers(0, 5)) == 0:
        return {"type": "array", "items": {"type": "integer"}, "uniqueItems": True, "minItems": 1}
    schema: dict[str, Any] = {"type": "array", "items": draw(children)}
    if draw(st.booleans()):
        low = draw(st.integers(0, 2))
        schema.update(minItems=low, maxItems=low + draw(st.integers(0, 2)))
    return schema


@st.composite
def tagged_one_of(
    draw: st.DrawFn, children: st.SearchStrategy[dict[str, Any]], dialect: str
) -> dict[str, Any]:
    count = draw(st.integers(2, 3))
    alts = []
    for i in range(count):
        body = draw(objects(children))
        tag = {"const": f"k{i}"} if dialect != OAS30 else {"type": "string", "enum": [f"k{i}"]}
        body["properties"] = {**body["properties"], "kind": tag}
        body["required"] = [*body.get("required", []), "kind"]
        alts.append(body)
    return {"oneOf": alts}


@st.composite
def all_of(draw: st.DrawFn, children: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    first = {"type": "object", "properties": {"left": draw(children)}, "required": ["left"]}
    second = {"type": "object", "properties": {"right": draw(children)}}
    return {"allOf": [first, second]}


@st.composite
def embedded(
    draw: st.DrawFn, children: st.SearchStrategy[dict[str, Any]], dialect: str
) -> dict[str, Any]:
    inner = draw(objects(children))
    if dialect == OAS30:
        return {"type": "string", "x-serialization": "json", "contentSchema": inner}
    return {"type": "string", "contentMediaType": "application/json", "contentSchema": inner}


def _tree(ref: str) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["label"],
        "properties": {
            "label": {"type": "string", "maxLength": 8},
            "children": {"type": "array", "items": {"$ref": ref}},
        },
    }


@st.composite
def documents(draw: st.DrawFn, dialect: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(schema, document): the document is None for 2020-12 (refs resolve in the schema)."""
    body = draw(st.recursive(scalars(dialect), _extend(dialect), max_leaves=10))
    use_ref = draw(st.booleans())
    if dialect == OAS30:
        ref = "#/components/schemas/Tree"
        schema = {"type": "object", "properties": {"body": body}, "required": ["body"]}
        if use_ref:
            schema["properties"]["tree"] = {"$ref": ref}
        doc = {
            "openapi": "3.0.3",
            "info": {"title": "generated", "version": "1"},
            "paths": {},
            "components": {"schemas": {"Tree": _tree(ref)}},
        }
        return schema, doc
    ref = "#/$defs/tree"
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"body": body},
        "required": ["body"],
        "$defs": {"tree": _tree(ref)},
    }
    if use_ref:
        schema["properties"]["tree"] = {"$ref": ref}
    return schema, None
