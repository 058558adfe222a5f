"""Filled template -> payload: the inverse walk over the same nodes the template came from."""

import json
from collections.abc import Mapping
from typing import Any

from compiler.imprint.auto import AutoValues
from compiler.imprint.build import Compiler
from compiler.imprint.checks import check_json, check_leaf
from compiler.imprint.choice_inverse import choose
from compiler.imprint.errors import TemplateError, child_path
from compiler.imprint.jsontext import parse_json
from compiler.imprint.limits import MAX_CONVERSION_STEPS, MAX_NESTING
from compiler.imprint.nodes import Arr, Embedded, Leaf, Node, Obj, OneOf, RefMark, Tup
from compiler.imprint.objects_inverse import convert_object
from compiler.imprint.template import render
from compiler.imprint.tokens import looks_like_token
from compiler.imprint.unfilled import OMIT, Omit, asks_for_input, kind_of


def template_to_payload(
    filled: Any,
    schema: dict[str, Any],
    *,
    document: dict[str, Any] | None = None,
    synonyms: Mapping[str, str] | None = None,
    auto: AutoValues | None = None,
    max_depth: int = 8,
) -> Any:
    """Turn a filled template back into the payload the schema describes.

    Unfilled OPTIONAL tokens (and optional parts left exactly as templated) are dropped;
    `{ONE_OF}` and maps are resolved; JSON carried in strings is serialized again; keys that
    are synonyms are renamed. An AUTO token left in place takes its `default:` (consts,
    discriminator values), else a value from `auto` when the property is required or marked
    `x-forge-auto`; an optional readOnly AUTO is left out for the server to assign.

    Args:
        filled: the filled template (decoded JSON; bytes are decoded as UTF-8 JSON text).
        schema: the schema the template was made from.
        document: the document its `$ref`s resolve against.
        synonyms: {name the model may use: property name in the schema} (either direction
            is recognized); e.g. {"user_id": "customer_id"}.
        auto: the provider of AUTO values (uuids, timestamps); pure code never makes them.
        max_depth: as given to `schema_to_template` (filled markers convert either way).

    Returns:
        The payload.

    Raises:
        TemplateError: naming the JSON path of a required token left unfilled or of a value
            that breaks its token (type, enum, range, length, pattern, format, shape).
    """
    return convert_filled(filled, schema, document, "#", synonyms, auto, max_depth=max_depth)


def convert_filled(
    filled: Any,
    schema: dict[str, Any],
    document: Mapping[str, Any] | None,
    where: str,
    synonyms: Mapping[str, str] | None,
    auto: AutoValues | None,
    *,
    max_depth: int = 8,
) -> Any:
    """`template_to_payload` for a schema found at `where` in `document`."""
    if isinstance(filled, bytes | bytearray):
        filled = parse_json(filled)
    if synonyms is not None and not (
        isinstance(synonyms, Mapping)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in synonyms.items())
    ):
        raise TemplateError("argument", "synonyms", "must map names to names", "pass {str: str}")
    if auto is not None and not isinstance(auto, AutoValues):
        raise TemplateError(
            "argument", "auto", "must provide value_for(token, path)", "pass an AutoValues"
        )
    compiler = Compiler(schema, document, max_depth)
    root = compiler.compile(schema, where)
    result = Inverse(compiler, synonyms or {}, auto).convert(root, filled, "$", 0, True)
    if isinstance(result, Omit):
        raise TemplateError("unfilled", "$", "nothing was filled", "fill the template")
    return result


class Inverse:
    """One conversion: the compiler (to expand `{REF: ...}`), synonyms and the AUTO provider."""

    def __init__(
        self, compiler: Compiler, synonyms: Mapping[str, str], auto: AutoValues | None
    ) -> None:
        self.compiler = compiler
        self.synonyms = dict(synonyms)
        self.reverse: dict[str, list[str]] = {}
        for alias, name in synonyms.items():
            self.reverse.setdefault(name, []).append(alias)
        self.auto = auto
        # node id -> (its template, whether it asks for input); nodes outlive the conversion
        self._rendered: dict[int, tuple[Any, bool]] = {}
        # (alternative, value, path, required) -> the value and its outcome: a choice tries
        # alternatives that share sub-schemas, so the same part is converted only once
        # (the value is kept so its id cannot be reused by another object).
        self.tried: dict[tuple[int, int, str, bool], tuple[Any, Any, TemplateError | None]] = {}
        self.steps = 0
        self._expanding: set[tuple[str, int, str]] = set()

    def convert(self, node: Node, value: Any, path: str, depth: int, required: bool) -> Any:
        """Convert `value` at `path` as `node` says; OMIT when an optional part is unfilled."""
        self.steps += 1
        if self.steps > MAX_CONVERSION_STEPS:
            raise TemplateError(
                "limit",
                path,
                f"the conversion took more than {MAX_CONVERSION_STEPS} steps",
                "send a smaller value, or use a discriminator so choices need no trying",
            )
        if depth > MAX_NESTING:
            raise TemplateError(
                "limit", path, f"nested deeper than {MAX_NESTING} levels", "flatten the value"
            )
        if isinstance(node, Leaf):
            if looks_like_token(value):
                return self.unfilled_leaf(node, value, path)
            return check_leaf(node, value, path)
        if isinstance(node, RefMark):
            if looks_like_token(value):
                return self.unfilled(required, path, value, "the recursive value")
            return self._expanded(node, value, path, depth, required)
        if isinstance(node, OneOf):
            return choose(self, node, value, path, depth, required)
        if looks_like_token(value):
            return self.unfilled(required, path, value, "this part")
        if isinstance(node, Obj):
            if value is None and node.nullable:
                return None
            return convert_object(self, node, value, path, depth)
        if isinstance(node, Arr):
            return self._array(node, value, path, depth)
        if isinstance(node, Tup):
            return self._tuple(node, value, path, depth)
        return self._embedded(node, value, path, depth)

    def left_as_is(self, node: Node, value: Any) -> bool:
        """True when `value` is exactly the template of `node` and that asks for input.

        A template made only of AUTO tokens asks for nothing, so a copy of it is a choice
        (one more element, one more constant), not something left unfilled.
        """
        if not isinstance(value, str | dict | list):
            return False
        key = id(node)
        if key not in self._rendered:
            template = render(node)
            self._rendered[key] = (template, asks_for_input(template))
        template, asks = self._rendered[key]
        if isinstance(value, str) and looks_like_token(value) and value != template:
            return not value.startswith("{AUTO")
        return asks and bool(value == template)

    def unfilled_leaf(self, leaf: Leaf, value: Any, path: str) -> Any:
        """A token left as it was: AUTO is generated, OPTIONAL dropped, FILL is an error."""
        if leaf.token.kind == "AUTO":
            return self.auto_value(leaf, path)
        if leaf.token.kind in ("OPTIONAL", "OPTIONAL_ENUM") or not leaf.required:
            return OMIT
        return self.unfilled(True, path, value, "a value")

    def auto_value(self, leaf: Leaf, path: str) -> Any:
        """The system's value for an AUTO position (or OMIT when the server should set it)."""
        if not (leaf.required or leaf.always_auto):
            return OMIT  # e.g. readOnly: the server assigns it
        has_default, default = leaf.token.default()
        if has_default:
            return default
        if self.auto is None:
            if not leaf.required:
                return OMIT
            raise TemplateError(
                "auto",
                path,
                f"{leaf.token} is required and system-generated, but no provider was given",
                "pass auto=AutoByFormat({...}) (or any AutoValues) to the conversion",
            )
        try:
            generated = self.auto.value_for(leaf.token, path)
        except LookupError as err:
            raise TemplateError(
                "auto", path, f"the AUTO provider cannot make {leaf.token}: {err}", "extend it"
            ) from None
        return check_leaf(leaf, generated, path)

    def unfilled(self, required: bool, path: str, value: Any, what: str) -> Any:
        if not required:
            return OMIT
        raise TemplateError(
            "unfilled",
            path,
            f"required {what} was left unfilled ({value})",
            "replace the token with a value of the type it names",
        )

    def _expanded(self, mark: RefMark, value: Any, path: str, depth: int, required: bool) -> Any:
        # A reference reached again for the same value, with no object or array in between
        # (`A: {anyOf: [{$ref: A}, ...]}`), would loop without consuming any of the value.
        key = (mark.pointer, id(value), path)
        if key in self._expanding:
            raise TemplateError(
                "schema",
                path,
                f"{mark.pointer} refers to itself without any object or array in between",
                "give the recursive reference a containing object or array",
            )
        self._expanding.add(key)
        try:
            return self.convert(self.compiler.expand(mark), value, path, depth, required)
        finally:
            self._expanding.discard(key)

    def _array(self, node: Arr, value: Any, path: str, depth: int) -> Any:
        if value is None and node.nullable:
            return None
        if not isinstance(value, list):
            raise TemplateError(
                "type", path, f"expected a list, got {kind_of(value)}", "send a JSON array"
            )
        out: list[Any] = []
        for i, item in enumerate(value):
            if self.left_as_is(node.item, item):
                continue  # the representative element, left as it was: no element
            converted = self.convert(node.item, item, child_path(path, i), depth + 1, True)
            if not isinstance(converted, Omit):
                out.append(converted)
        self._counted(node, out, path)
        return out

    def _counted(self, node: Arr | Tup, out: list[Any], path: str) -> None:
        if node.min_items is not None and len(out) < node.min_items:
            raise TemplateError(
                "count", path, f"{len(out)} item(s)", f"send at least {node.min_items} items"
            )
        if node.max_items is not None and len(out) > node.max_items:
            raise TemplateError(
                "count", path, f"{len(out)} item(s)", f"send at most {node.max_items} items"
            )
        if node.unique:
            seen: set[str] = set()
            for i, item in enumerate(out):
                key = json.dumps(item, sort_keys=True)
                if key in seen:
                    raise TemplateError(
                        "unique", child_path(path, i), "duplicate item", "items must be unique"
                    )
                seen.add(key)

    def _tuple(self, node: Tup, value: Any, path: str, depth: int) -> Any:
        if value is None and node.nullable:
            return None
        if not isinstance(value, list):
            raise TemplateError(
                "type", path, f"expected a list, got {kind_of(value)}", "send a JSON array"
            )
        out: list[Any] = []
        gap: int | None = None  # the first optional position left unfilled
        for i, item in enumerate(value):
            at = child_path(path, i)
            if i >= len(node.positions):
                if node.rest is None:
                    raise TemplateError(
                        "count",
                        at,
                        f"the tuple has {len(node.positions)} position(s) and no more",
                        f"send at most {len(node.positions)} items",
                    )
                if self.left_as_is(node.rest, item):
                    continue  # the representative further item, left as it was
                converted = self.convert(node.rest, item, at, depth + 1, True)
            else:
                required = i < (node.min_items or 0)
                position = node.positions[i]
                converted = OMIT
                if required or not self.left_as_is(position, item):
                    converted = self.convert(position, item, at, depth + 1, required)
            if isinstance(converted, Omit):
                gap = i if gap is None else gap
            elif gap is not None:
                raise TemplateError(
                    "unfilled",
                    child_path(path, gap),
                    f"position {gap} was left unfilled, but a later item is filled",
                    "fill every position up to the last one you send",
                )
            else:
                out.append(converted)
        self._counted(node, out, path)
        return out

    def _embedded(self, node: Embedded, value: Any, path: str, depth: int) -> Any:
        if value is None and node.nullable:
            return None
        untyped = isinstance(node.inner, Leaf) and node.inner.schema_type is None
        if isinstance(value, str):
            try:
                value = parse_json(value)
            except TemplateError as err:
                if untyped:  # no contentSchema: plain text is the JSON string it reads as
                    return json.dumps(value, ensure_ascii=False)
                raise TemplateError(
                    "json",
                    path,
                    f"this string carries JSON, and the text is not JSON ({err.problem})",
                    "send the nested object itself; it is serialized for you",
                ) from None
        inner = self.convert(node.inner, value, path, depth + 1, True)
        check_json(inner, path)
        return json.dumps(inner, ensure_ascii=False, separators=(",", ":"))
