"""Adapter: object.yaml -> object.json (one YAML document, dates as ISO 8601 strings)."""

from __future__ import annotations

import base64
import datetime
import json
import pathlib
import sys
from typing import Any

import yaml


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys instead of silently keeping the last."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        # Merge keys (<<) legitimately repeat and may be overridden by explicit keys.
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        try:
            first_line = seen.get(key)
        except TypeError:
            # An unhashable key is rejected by PyYAML's own construct_mapping below.
            continue
        if first_line is not None:
            raise ValueError(
                f"line {line}: duplicate key {key!r} (first defined on line {first_line})"
            )
        seen[key] = line
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def to_json_value(value: Any, path: str = "$") -> Any:
    """Convert what yaml.safe_load can produce into JSON-compatible values."""
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {
            _json_key(key, path): to_json_value(item, f"{path}.{key}")
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [to_json_value(item, f"{path}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, set):
        # !!set has no JSON form; a sorted list of its members keeps the content.
        return [to_json_value(item, path) for item in sorted(value, key=repr)]
    if isinstance(value, bytes):
        # !!binary arrives decoded; re-encoding keeps it as the base64 text the author wrote.
        return base64.b64encode(value).decode("ascii")
    return value


def _json_key(key: Any, path: str) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, datetime.date | datetime.datetime):
        return key.isoformat()
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, int | float):
        return str(key)
    raise ValueError(f"{path}: mapping key {key!r} has no JSON representation")


def load_single_document(src: pathlib.Path) -> Any:
    """Parse exactly one YAML document; several documents are refused, none yields null."""
    text = src.read_text(encoding="utf-8-sig")
    documents = list(yaml.load_all(text, Loader=_StrictLoader))
    if len(documents) > 1:
        raise ValueError(
            f"{src.name} holds {len(documents)} YAML documents; exactly one is allowed"
        )
    return documents[0] if documents else None


def transform(src: pathlib.Path, dst: pathlib.Path) -> dict[str, Any]:
    """Convert the YAML file at src into a JSON file at dst and summarise it."""
    data = to_json_value(load_single_document(pathlib.Path(src)))
    # allow_nan=False because YAML's .nan/.inf would otherwise produce invalid JSON.
    text = json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False)
    pathlib.Path(dst).write_text(text + "\n", encoding="utf-8")
    summary: dict[str, Any] = {"top_level_type": _json_type(data)}
    if isinstance(data, dict):
        summary["keys"] = list(data)
    elif isinstance(data, list):
        summary["items"] = len(data)
    return summary


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string"


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(f"usage: {pathlib.Path(__file__).name} SRC DST")
    print(json.dumps(transform(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]))))
