"""Nodes -> the template a model fills, and the notes for constraints tokens cannot carry."""

from collections.abc import Mapping
from typing import Any

from compiler.imprint.build import Compiler
from compiler.imprint.nodes import Arr, Embedded, Leaf, Node, Obj, OneOf, Tup
from compiler.imprint.tokens import ONE_OF


def schema_to_template(
    schema: dict[str, Any], *, document: dict[str, Any] | None = None, max_depth: int = 8
) -> Any:
    """Translate a JSON Schema into a self-describing template.

    Args:
        schema: the schema (JSON Schema, or an OpenAPI/Swagger schema object).
        document: the document local `$ref`s resolve against (`#/components/schemas/...`,
            `#/definitions/...`); its `openapi`/`swagger` field selects the dialect. Without
            it, refs resolve against `schema` itself.
        max_depth: nested `$ref` expansions before `{REF: max_depth}` stops the traversal.

    Returns:
        The template: nested dicts/lists whose leaves are token strings. A list holds one
        template for every element; a tuple (`prefixItems`, or draft-04 `items` as a list)
        holds one template per position instead, and `constraint_notes` marks it as a tuple.
        An array that can only be empty (`items: false`) is `{AUTO|array|default:[]}`, and a
        property whose schema is `false` is left out.

    Raises:
        TemplateError: the schema is malformed, a `$ref` does not resolve, or a limit is hit.
    """
    return render(Compiler(schema, document, max_depth).compile(schema))


def render(node: Node) -> Any:
    """Render one compiled node as template JSON."""
    if isinstance(node, Leaf):
        return str(node.token)
    if isinstance(node, Obj):
        out: dict[str, Any] = {p.name: render(p.node) for p in node.props}
        for slot in node.slots:
            out[str(slot.key)] = render(slot.node)
        return out
    if isinstance(node, Arr):
        return [render(node.item)]
    if isinstance(node, Tup):  # a tuple: one template per position, in order
        return [render(p) for p in node.positions]
    if isinstance(node, OneOf):
        return {ONE_OF: [render(a) for a in node.alts]}
    if isinstance(node, Embedded):
        return render(node.inner)
    return node.marker


def constraint_notes(
    schema: dict[str, Any], *, document: dict[str, Any] | None = None, max_depth: int = 8
) -> dict[str, str]:
    """Constraints a token cannot show (item and property counts), keyed by template path.

    Paths use `[*]` for "every element", `{KEY}` for "every map value" and `{ONE_OF}[i]` for
    "inside alternative i", e.g. `$.items[*].tags` or `$.source{ONE_OF}[1].lines`. They suit
    the header's constraints slot of `render_template`.

    Args:
        schema: as for `schema_to_template`.
        document: as for `schema_to_template`.
        max_depth: as for `schema_to_template`.

    Returns:
        {path: note}, e.g. {"$.tags": "1-5 items, unique"}.
    """
    notes: dict[str, str] = {}
    _collect(Compiler(schema, document, max_depth).compile(schema), "$", notes)
    return notes


def _collect(node: Node, path: str, notes: dict[str, str]) -> None:
    if isinstance(node, Arr):
        note = _count_note(node.min_items, node.max_items, "items")
        if node.unique:
            note = f"{note}, unique" if note else "unique items"
        if note:
            notes[path] = note
        _collect(node.item, f"{path}[*]", notes)
    elif isinstance(node, Tup):
        notes[path] = _tuple_note(node)
        for i, position in enumerate(node.positions):
            _collect(position, f"{path}[{i}]", notes)
    elif isinstance(node, Obj):
        note = _count_note(node.min_props, node.max_props, "properties")
        if note:
            notes[path] = note
        for prop in node.props:
            _collect(prop.node, _join(path, prop.name), notes)
        for slot in node.slots:
            _collect(slot.node, f"{path}{{KEY}}", notes)
    elif isinstance(node, OneOf):
        for i, alt in enumerate(node.alts):
            _collect(alt, f"{path}{ONE_OF}[{i}]", notes)
    elif isinstance(node, Embedded):
        _collect(node.inner, path, notes)


def _tuple_note(node: Tup) -> str:
    count = len(node.positions)
    note = f"a tuple: item i as templated at position i ({count} position{'s'[: count > 1]})"
    if node.min_items:
        note += f", the first {node.min_items} required"
    if node.rest is None:
        note += ", no further items"
    elif node.max_items is not None:
        note += f", at most {node.max_items} items in all"
    return note + (", unique" if node.unique else "")


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if name.isidentifier() else f'{path}["{name}"]'


def _count_note(low: int | None, high: int | None, what: str) -> str:
    if low is None and high is None:
        return ""
    if high is None:
        return f"at least {low} {what}"
    if low is None or low == 0:
        return f"at most {high} {what}"
    return f"{low}-{high} {what}" if low != high else f"exactly {low} {what}"


def compile_schema(
    schema: dict[str, Any], document: Mapping[str, Any] | None, max_depth: int = 8
) -> tuple[Compiler, Node]:
    """Compile once and return the compiler too (it expands `{REF: ...}` markers later)."""
    compiler = Compiler(schema, document, max_depth)
    return compiler, compiler.compile(schema)
