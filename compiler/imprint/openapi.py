"""OpenAPI 3.0/3.1 and Swagger 2.0 operations: request body and parameters, templated and back."""

import difflib
from collections.abc import Mapping
from typing import Any, NamedTuple

from compiler.imprint.auto import AutoValues
from compiler.imprint.build import Compiler
from compiler.imprint.errors import TemplateError, pointer_child
from compiler.imprint.payload import convert_filled
from compiler.imprint.refs import OAS2, Resolver, dialect_of
from compiler.imprint.swagger import body_from_swagger, parameter_schema
from compiler.imprint.template import render

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
LOCATIONS = ("path", "query", "header", "cookie")
_PREFERRED = ("application/json", "application/x-www-form-urlencoded", "multipart/form-data")


class OperationTemplate(NamedTuple):
    """What the model fills for one operation. `media_type`/`template` are None without body."""

    media_type: str | None
    template: Any
    parameters_template: dict[str, Any]


class RequestBody(NamedTuple):
    """The body an operation takes: media type, schema and where the schema sits."""

    media_type: str
    schema: dict[str, Any]
    where: str


def operation_template(
    document: dict[str, Any], method: str, path: str, *, max_depth: int = 8
) -> OperationTemplate:
    """Template the request of one operation.

    Args:
        document: an OpenAPI 3.0/3.1 or Swagger 2.0 document (parsed JSON/YAML).
        method: the HTTP method, any case.
        path: the path key exactly as written in the document, e.g. `/pets/{petId}`.
        max_depth: nested `$ref` expansions before `{REF: max_depth}`, as for
            `schema_to_template`; large schemas also stop at that marker once the template
            holds `REF_NODE_BUDGET` nodes.

    Returns:
        OperationTemplate(media_type, template, parameters_template); parameters_template is
        `{"path": {...}, "query": {...}, "header": {...}, "cookie": {...}}` with only the
        locations the operation uses (an empty dict when it has no parameters).

    Raises:
        TemplateError: the document, path or method is wrong, or a schema cannot be templated.
    """
    body = request_body(document, method, path)
    template = None
    if body is not None:
        compiler = Compiler(body.schema, document, max_depth)
        template = render(compiler.compile(body.schema, body.where))
    params_schema = parameters_schema(document, method, path)
    params: dict[str, Any] = {}
    if params_schema is not None:
        compiler = Compiler(params_schema, document, max_depth)
        params = render(compiler.compile(params_schema, _op_pointer(method, path)))
    return OperationTemplate(body.media_type if body else None, template, params)


def operation_payload(
    document: dict[str, Any],
    method: str,
    path: str,
    filled: Any,
    *,
    synonyms: Mapping[str, str] | None = None,
    auto: AutoValues | None = None,
    max_depth: int = 8,
) -> Any:
    """Turn the filled body template of an operation into its request payload.

    `max_depth` is the one `operation_template` was given (a filled `{REF: ...}` position
    converts either way; the same value keeps the two directions aligned).

    Raises:
        TemplateError: as `template_to_payload`, or the operation takes no body.
    """
    body = request_body(document, method, path)
    if body is None:
        if filled is None:
            return None
        raise TemplateError(
            "operation",
            f"{method.upper()} {path}",
            "the operation takes no request body",
            "send no body (None)",
        )
    return convert_filled(
        filled, body.schema, document, body.where, synonyms, auto, max_depth=max_depth
    )


def operation_parameters(
    document: dict[str, Any],
    method: str,
    path: str,
    filled: Any,
    *,
    synonyms: Mapping[str, str] | None = None,
    auto: AutoValues | None = None,
) -> dict[str, Any]:
    """Turn a filled `parameters_template` into {location: {name: value}}."""
    schema = parameters_schema(document, method, path)
    if schema is None:
        return {}
    result = convert_filled(filled, schema, document, _op_pointer(method, path), synonyms, auto)
    return result if isinstance(result, dict) else {}


def request_body(document: dict[str, Any], method: str, path: str) -> RequestBody | None:
    """The request body of an operation (media type, schema, pointer), or None."""
    op, item = _operation(document, method, path)
    if dialect_of(document) == OAS2:
        params = _parameters(document, op, item, method, path)
        found = body_from_swagger(document, params, op, _op_pointer(method, path))
        return None if found is None else RequestBody(*found)
    raw = op.get("requestBody")
    if raw is None:
        return None
    where = pointer_child(_op_pointer(method, path), "requestBody")
    resolver = Resolver(document, dialect_of(document))
    if isinstance(raw, dict) and "$ref" in raw:
        where, raw = resolver.resolve(raw["$ref"], where)
    content = raw.get("content") if isinstance(raw, dict) else None
    if not isinstance(content, dict) or not content:
        raise TemplateError("schema", where, "requestBody has no content", "add a content map")
    media = _pick_media_type(list(content))
    entry = content[media]
    at = pointer_child(pointer_child(where, "content"), media)
    schema = entry.get("schema") if isinstance(entry, dict) else None
    if schema is None:
        textual = "json" in media or media.startswith(("text/", "application/x-www", "multipart"))
        schema = {} if textual else {"type": "string", "format": "binary"}
    return RequestBody(media, schema, pointer_child(at, "schema"))


def parameters_schema(document: dict[str, Any], method: str, path: str) -> dict[str, Any] | None:
    """One object schema {location: {name: schema}} for an operation's parameters, or None."""
    op, item = _operation(document, method, path)
    groups: dict[str, dict[str, Any]] = {}
    for param in _parameters(document, op, item, method, path):
        location = param.get("in")
        if location not in LOCATIONS:
            continue  # Swagger 2.0 body/formData parameters are the request body
        group = groups.setdefault(location, {"type": "object", "properties": {}, "required": []})
        group["properties"][param["name"]] = parameter_schema(document, param)
        if param.get("required") is True or location == "path":
            group["required"].append(param["name"])
    if not groups:
        return None
    return {
        "type": "object",
        "properties": groups,
        "required": [loc for loc, g in groups.items() if g["required"]],
    }


def _operation(document: Any, method: str, path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    if not isinstance(document, dict):
        raise TemplateError(
            "argument",
            "document",
            f"an OpenAPI document must be a JSON object, got {type(document).__name__}",
            "pass the parsed document (parse_json(...) reads it with clear errors)",
        )
    if not isinstance(path, str) or not isinstance(method, str):
        wrong, given = ("path", path) if not isinstance(path, str) else ("method", method)
        raise TemplateError(
            "argument",
            wrong,
            f"the {wrong} must be a string, got {type(given).__name__}",
            "pass the path key as written in the document (e.g. /pets/{id}) and a method name",
        )
    paths = document.get("paths")
    if not isinstance(paths, dict):
        raise TemplateError(
            "schema", "#/paths", "the document has no paths object", "is this an OpenAPI document?"
        )
    item = paths.get(path)
    if item is None:
        close = difflib.get_close_matches(path, [str(p) for p in paths], n=3)
        hint = f"did you mean {', '.join(close)}?" if close else "use a path key from #/paths"
        raise TemplateError("operation", path, "no such path in the document", hint)
    if isinstance(item, dict) and "$ref" in item:
        _, item = Resolver(document, dialect_of(document)).resolve(item["$ref"], "#/paths")
    lowered = method.lower() if isinstance(method, str) else ""
    op = item.get(lowered) if isinstance(item, dict) and lowered in METHODS else None
    if not isinstance(op, dict):
        available = [m.upper() for m in METHODS if isinstance(item, dict) and m in item]
        raise TemplateError(
            "operation",
            f"{str(method).upper()} {path}",
            "no such operation",
            f"this path supports: {', '.join(available) or 'nothing'}",
        )
    return op, item


def _parameters(
    document: dict[str, Any], op: dict[str, Any], item: dict[str, Any], method: str, path: str
) -> list[dict[str, Any]]:
    """Path-level parameters overridden by operation-level ones (same name and location)."""
    resolver = Resolver(document, dialect_of(document))
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for owner, where in ((item, _path_pointer(path)), (op, _op_pointer(method, path))):
        raw = owner.get("parameters", [])
        if not isinstance(raw, list):
            raise TemplateError("schema", where, "parameters must be a list", "fix the document")
        for i, param in enumerate(raw):
            at = pointer_child(pointer_child(where, "parameters"), i)
            if isinstance(param, dict) and "$ref" in param:
                at, param = resolver.resolve(param["$ref"], at)
            if not isinstance(param, dict) or not isinstance(param.get("name"), str):
                raise TemplateError("schema", at, "a parameter needs a name", "fix the document")
            merged[(param["name"], str(param.get("in")))] = param
    return list(merged.values())


def _pick_media_type(media_types: list[str]) -> str:
    lowered = {m.split(";")[0].strip().lower(): m for m in media_types}
    for preferred in _PREFERRED:
        if preferred in lowered:
            return lowered[preferred]
    for plain, original in lowered.items():
        if plain.endswith("+json") or plain == "*/*":
            return original
    return media_types[0]


def _path_pointer(path: str) -> str:
    return pointer_child("#/paths", path)


def _op_pointer(method: str, path: str) -> str:
    return pointer_child(_path_pointer(path), str(method).lower())
