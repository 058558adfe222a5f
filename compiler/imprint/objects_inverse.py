"""Filled objects back to payload objects: synonyms, required keys, map keys, unknown keys."""

import difflib
import re
from typing import TYPE_CHECKING, Any

from compiler.imprint.checks import check_json
from compiler.imprint.errors import TemplateError, child_path
from compiler.imprint.nodes import KeySlot, Leaf, Obj, Prop
from compiler.imprint.template import render
from compiler.imprint.tokens import looks_like_token
from compiler.imprint.unfilled import OMIT, Omit, kind_of, untouched

if TYPE_CHECKING:  # payload imports this module; the converter is only passed in
    from compiler.imprint.payload import Inverse


def convert_object(inv: "Inverse", node: Obj, value: Any, path: str, depth: int) -> Any:
    """Convert a filled object; returns the payload object in the schema's property order."""
    if not isinstance(value, dict):
        raise TemplateError(
            "type", path, f"expected an object, got {kind_of(value)}", "send a JSON object"
        )
    for key in value:
        if not isinstance(key, str):
            raise TemplateError(
                "type", path, f"object key {key!r} is not a string", "use string keys"
            )
    named = _renamed(inv, node, value, path)
    out: dict[str, Any] = {}
    for prop in node.props:
        converted = _property(inv, prop, named, path, depth)
        if not isinstance(converted, Omit):
            out[prop.name] = converted
    declared = {p.name for p in node.props}
    for key, item in named.items():
        if key in declared:
            continue
        converted = _extra(inv, node, key, item, path, depth)
        if not isinstance(converted, Omit):
            out[key] = converted
    if node.min_props is not None and len(out) < node.min_props:
        raise TemplateError(
            "count", path, f"{len(out)} properties", f"send at least {node.min_props}"
        )
    if node.max_props is not None and len(out) > node.max_props:
        raise TemplateError(
            "count", path, f"{len(out)} properties", f"send at most {node.max_props}"
        )
    return out


def _renamed(inv: "Inverse", node: Obj, value: dict[str, Any], path: str) -> dict[str, Any]:
    """Apply synonyms: a key the schema does not declare, whose synonym it does, is renamed."""
    if not inv.synonyms:
        return value
    declared = {p.name for p in node.props}
    out: dict[str, Any] = {}
    for key, item in value.items():
        name: str = key
        if key not in declared and isinstance(key, str):
            candidates = {*inv.reverse.get(key, [])} & declared
            forward = inv.synonyms.get(key)
            if forward is not None and forward in declared:
                candidates.add(forward)
            if len(candidates) == 1:
                name = candidates.pop()
        if name in out or (name != key and name in value):
            raise TemplateError(
                "synonym",
                child_path(path, key),
                f"{key!r} and {name!r} name the same property and both are given",
                f"keep only {name!r}",
            )
        out[name] = item
    return out


def _property(inv: "Inverse", prop: Prop, named: dict[str, Any], path: str, depth: int) -> Any:
    at = child_path(path, prop.name)
    leaf = prop.node if isinstance(prop.node, Leaf) else None
    if prop.name not in named:
        if leaf is not None and leaf.token.kind == "AUTO":
            return inv.auto_value(leaf, at)
        if not prop.required:
            return OMIT
        raise TemplateError(
            "missing",
            at,
            f"required property {prop.name!r} is missing",
            f"add it: {prop.name!r}: {_preview(prop)}",
        )
    item = named[prop.name]
    as_is = inv.left_as_is(prop.node, item)
    if not prop.required and as_is and not (leaf is not None and leaf.always_auto):
        return OMIT
    return inv.convert(prop.node, item, at, depth + 1, prop.required)


def _extra(inv: "Inverse", node: Obj, key: Any, item: Any, path: str, depth: int) -> Any:
    at = child_path(path, str(key))
    if looks_like_token(key):
        if untouched(item):
            return OMIT  # the map's representative entry, left as it was
        raise TemplateError(
            "unfilled",
            at,
            f"the map key {key} was not replaced by a real key",
            "write the real key in place of the {KEY|...} token",
        )
    if key in node.forbidden:
        raise TemplateError(
            "unknown", at, f"the schema forbids the property {key!r}", "leave it out"
        )
    slot = _slot_for(node.slots, key)
    if slot is not None:
        _check_key(slot, key, at)
        return inv.convert(slot.node, item, at, depth + 1, False)
    if node.open:
        check_json(item, at)
        return item
    declared = [p.name for p in node.props]
    close = difflib.get_close_matches(str(key), declared, n=1)
    hint = f"did you mean {close[0]!r}?" if close else "remove it"
    if declared:
        hint += f" This object accepts: {', '.join(declared[:12])}"
        hint += " ..." if len(declared) > 12 else ""
    raise TemplateError("unknown", at, f"{key!r} is not a property of this object", hint)


def _slot_for(slots: tuple[KeySlot, ...], key: str) -> KeySlot | None:
    for slot in slots:
        if slot.pattern is not None and _search(slot.pattern, key):
            return slot
    for slot in slots:
        if slot.pattern is None:
            return slot
    return None


def _check_key(slot: KeySlot, key: str, at: str) -> None:
    low, high = slot.key.modifier("min_length"), slot.key.modifier("max_length")
    pattern = slot.key.modifier("pattern")
    bad = (low is not None and len(key) < int(low)) or (high is not None and len(key) > int(high))
    if slot.key.kind == "KEY_ENUM" and key not in slot.key.values:
        raise TemplateError(
            "key",
            at,
            f"the key {key!r} is not one of the allowed names",
            f"use one of: {', '.join(slot.key.values[:20])}",
        )
    if pattern is not None and slot.pattern is None and not _search(pattern, key):
        bad = True
    if bad:
        raise TemplateError(
            "key", at, f"the key {key!r} breaks {slot.key}", "choose a key that fits the token"
        )


def _search(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return True  # a pattern Python cannot compile is not enforced here


def _preview(prop: Prop) -> str:
    text = str(render(prop.node))
    return text if len(text) <= 80 else text[:77] + "..."
