"""Payload -> request body bytes: JSON, form-urlencoded (bracket notation), multipart/form-data."""

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

from compiler.imprint.checks import check_integer, check_json, check_text
from compiler.imprint.errors import TemplateError, child_path
from compiler.imprint.limits import MAX_NESTING
from compiler.imprint.refs import Resolver, dialect_of

JSON_TYPES = ("application/json", "text/json")
FORM = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"
# RFC 3986 unreserved characters: the bytes a form value keeps as they are (as urlencode does).
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")


def encode_body(
    payload: Any,
    media_type: str,
    schema: dict[str, Any],
    *,
    document: Mapping[str, Any] | None = None,
) -> bytes:
    """Serialize a payload for the wire.

    - JSON (`application/json`, `*+json`): compact UTF-8 JSON, keys in payload order.
    - `application/x-www-form-urlencoded`: nested objects in bracket (deepObject) notation
      `a[b][c]=v`; arrays of scalars as `key[]=v`, arrays holding objects or arrays indexed
      `key[0][f]=v` (the style Stripe's API reads); true/false as text; null, [] and {} as an
      empty value. Names and values are percent-encoded like `urllib.parse.urlencode`.
    - `multipart/form-data`: one part per field in payload order; scalars as text parts,
      objects as `application/json` parts (OpenAPI's default), arrays as one part per element,
      `bytes` and `format: binary` strings as file parts (`filename` = field name); None
      fields are left out. The boundary is derived from the content (sha256), so equal payloads
      give equal bytes; read it back with `content_type_header`.
    - `text/plain` (a string) and `application/octet-stream` (bytes or a string).

    Args:
        payload: the payload (e.g. from `template_to_payload`).
        media_type: the request media type; parameters such as charset are ignored.
        schema: the body schema; multipart reads `format`/`contentMediaType` of its properties
            (through `$ref`s and allOf members).
        document: the document the schema's `$ref`s resolve against (as `request_body`
            returns the schema as written, often a `$ref`); without it, against the schema.

    Returns:
        The body bytes.

    Raises:
        TemplateError: unsupported media type, or a payload the media type cannot carry.
    """
    plain = media_type.split(";")[0].strip().lower() if isinstance(media_type, str) else ""
    if plain in JSON_TYPES or plain.endswith("+json"):
        check_json(payload, "$")
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if plain == FORM:
        pairs: list[tuple[str, str]] = []
        for key, value in _top_object(payload, plain).items():
            check_text(str(key), child_path("$", str(key)))
            _flatten(str(key), value, child_path("$", str(key)), pairs, 0)
        return "&".join(f"{_quote(k)}={_quote(v)}" for k, v in pairs).encode("ascii")
    if plain == MULTIPART:
        return _multipart(_top_object(payload, plain), _fields(schema, document))
    if plain.startswith("text/") and isinstance(payload, str):
        check_text(payload, "$")
        return payload.encode("utf-8")
    if plain == "application/octet-stream" and isinstance(payload, bytes | str):
        return payload if isinstance(payload, bytes) else payload.encode("utf-8")
    raise TemplateError(
        "media_type",
        "$",
        f"cannot encode {type(payload).__name__} as {media_type!r}",
        f"use application/json, {FORM}, {MULTIPART}, text/* (str) or octet-stream (bytes)",
    )


def content_type_header(media_type: str, body: bytes) -> str:
    """The Content-Type header for a body made by `encode_body` (adds the multipart boundary)."""
    plain = media_type.split(";")[0].strip().lower()
    if plain != MULTIPART:
        return media_type
    first = body.split(b"\r\n", 1)[0]
    if not first.startswith(b"--"):
        raise TemplateError("media_type", "$", "not a multipart body", "encode it with encode_body")
    return f"{MULTIPART}; boundary={first[2:].decode('ascii')}"


def _top_object(payload: Any, media: str) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise TemplateError(
            "media_type", "$", f"{media} needs an object payload", "send an object of fields"
        )
    return payload


def _flatten(name: str, value: Any, path: str, out: list[tuple[str, str]], depth: int) -> None:
    if depth > 64:
        raise TemplateError("limit", path, "nested deeper than 64 levels", "flatten the value")
    if isinstance(value, dict) and value:
        for key, item in value.items():
            at = child_path(path, str(key))
            check_text(str(key), at)
            _flatten(f"{name}[{key}]", item, at, out, depth + 1)
    elif isinstance(value, list) and value:
        if all(not isinstance(v, dict | list) for v in value):
            out.extend((f"{name}[]", _scalar(v, path)) for v in value)
        else:
            for i, item in enumerate(value):
                _flatten(f"{name}[{i}]", item, child_path(path, i), out, depth + 1)
    elif isinstance(value, dict | list):
        out.append((name, ""))
    else:
        out.append((name, _scalar(value, path)))


def _scalar(value: Any, path: str) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        check_text(value, path)
        return value
    if isinstance(value, int):
        check_integer(value, path)
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return json.dumps(value)
    raise TemplateError(
        "type",
        path,
        f"{type(value).__name__} cannot be form-encoded",
        "send text, numbers or booleans (files need multipart/form-data)",
    )


def _quote(text: str) -> str:
    """Percent-encode like `urllib.parse.quote_plus` (UTF-8, space as `+`).

    Hand-written because compiler/ may not import urllib (tests/test_layers.py bans the whole
    package, urllib.parse included); tests compare the result with urllib's.
    """
    return "".join(
        chr(b) if b in _SAFE else "+" if b == 0x20 else f"%{b:02X}" for b in text.encode("utf-8")
    )


def _multipart(payload: dict[str, Any], props: dict[Any, Any]) -> bytes:
    parts: list[tuple[bytes, bytes]] = []
    for key, value in payload.items():
        check_text(str(key), child_path("$", str(key)))
        if value is None:
            continue
        spec = props.get(key, {})
        items = value if isinstance(value, list) else [value]
        item_spec = props.get((key, "items"), {}) if isinstance(value, list) else spec
        for item in items:
            parts.append(_part(str(key), item, item_spec if isinstance(item_spec, dict) else {}))
    digest = hashlib.sha256(b"".join(h + b"\x00" + b for h, b in parts)).hexdigest()
    boundary = f"forge-{digest[:32]}".encode("ascii")
    while any(boundary in h or boundary in b for h, b in parts):
        boundary = f"forge-{hashlib.sha256(boundary).hexdigest()[:32]}".encode("ascii")
    chunks = [b"--" + boundary + b"\r\n" + h + b"\r\n\r\n" + b + b"\r\n" for h, b in parts]
    return b"".join(chunks) + b"--" + boundary + b"--\r\n"


def _fields(schema: Any, document: Mapping[str, Any] | None) -> dict[Any, Any]:
    """The body's property schemas, `$ref`s resolved: {name: schema, (name, "items"): schema}.

    Only what multipart reads (`format`, `contentMediaType`) matters here, so a reference that
    does not resolve simply contributes nothing: the payload was checked against the schema.
    """
    if not isinstance(schema, dict):
        return {}
    root = document if document is not None else schema
    resolver = Resolver(root, dialect_of(root))
    out: dict[Any, Any] = {}
    pending: list[Any] = [schema]
    seen = 0
    while pending and seen < MAX_NESTING:
        seen += 1
        member = _resolved(pending.pop(0), resolver)
        members = member.get("allOf")
        pending.extend(members if isinstance(members, list) else [])
        props = member.get("properties")
        for name, spec in (props if isinstance(props, dict) else {}).items():
            if name not in out:
                out[name] = _resolved(spec, resolver)
                out[(name, "items")] = _resolved(out[name].get("items"), resolver)
    return out


def _resolved(schema: Any, resolver: Resolver) -> dict[str, Any]:
    if isinstance(schema, dict) and "$ref" in schema:
        try:
            _, schema = resolver.resolve(schema["$ref"], "#")
        except TemplateError:
            return {}
    return schema if isinstance(schema, dict) else {}


def _part(name: str, value: Any, spec: dict[str, Any]) -> tuple[bytes, bytes]:
    disposition = f'Content-Disposition: form-data; name="{_header_quote(name)}"'
    binary = spec.get("format") in ("binary", "base64") or "contentMediaType" in spec
    media = spec.get("contentMediaType")
    if isinstance(value, str):
        check_text(value, child_path("$", name))
    if isinstance(value, bytes) or (binary and isinstance(value, str)):
        content_type = media if isinstance(media, str) else "application/octet-stream"
        head = f'{disposition}; filename="{_header_quote(name)}"\r\nContent-Type: {content_type}'
        body = value if isinstance(value, bytes) else value.encode("utf-8")
        return head.encode("utf-8"), body
    if isinstance(value, dict | list):
        check_json(value, child_path("$", name))
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return f"{disposition}\r\nContent-Type: application/json".encode(), text.encode("utf-8")
    return disposition.encode("utf-8"), _scalar(value, child_path("$", name)).encode("utf-8")


def _header_quote(text: str) -> str:
    """Escape a field name as browsers do in multipart headers (WHATWG HTML form encoding)."""
    return text.replace("\r", "%0D").replace("\n", "%0A").replace('"', "%22")
