"""operation_template, operation_payload, operation_parameters: OpenAPI 3.0, 3.1, Swagger 2.0."""

from __future__ import annotations

import pytest

from compiler.imprint import (
    ONE_OF,
    OperationTemplate,
    TemplateError,
    content_type_header,
    encode_body,
    operation_parameters,
    operation_payload,
    operation_template,
    request_body,
)
from tests.imprint.conftest import AUTO, load, validator


def test_swagger_2_body_parameter() -> None:
    doc = load("swagger2-petstore.json")
    result = operation_template(doc, "POST", "/pet")
    assert isinstance(result, OperationTemplate)
    media_type, template, params = result  # a NamedTuple: unpacks too
    assert media_type == "application/json" and params == {}
    assert template["name"] == "{FILL|string}"
    assert template["photoUrls"] == ["{FILL|string}"]
    assert template["status"] == "{OPTIONAL_ENUM|available|pending|sold}"
    template["name"], template["photoUrls"] = "Rex", ["https://img.example/rex.png"]
    payload = operation_payload(doc, "post", "/pet", template)
    assert payload == {"name": "Rex", "photoUrls": ["https://img.example/rex.png"]}


def test_swagger_2_form_data_parameters_make_the_body() -> None:
    doc = load("swagger2-petstore.json")
    form = operation_template(doc, "post", "/pet/{petId}")
    assert form.media_type == "application/x-www-form-urlencoded"
    assert form.template == {"name": "{OPTIONAL|string}", "status": "{OPTIONAL|string}"}
    assert form.parameters_template == {"path": {"petId": "{FILL|integer|format:int64}"}}
    upload = operation_template(doc, "post", "/pet/{petId}/uploadImage")
    assert upload.media_type == "multipart/form-data"
    assert upload.template["file"] == "{OPTIONAL|string|format:binary}"


def test_openapi_3_0_parameters_and_no_body() -> None:
    doc = load("oas30-petstore.json")
    result = operation_template(doc, "get", "/pet/{petId}")
    assert result == OperationTemplate(
        None, None, {"path": {"petId": "{FILL|integer|format:int64}"}}
    )
    assert operation_payload(doc, "get", "/pet/{petId}", None) is None
    with pytest.raises(TemplateError) as info:
        operation_payload(doc, "get", "/pet/{petId}", {"x": 1})
    assert info.value.reason == "operation" and "no request body" in info.value.problem
    filled = {"path": {"petId": 7}}
    assert operation_parameters(doc, "get", "/pet/{petId}", filled) == {"path": {"petId": 7}}
    with pytest.raises(TemplateError) as info:
        operation_parameters(doc, "get", "/pet/{petId}", result.parameters_template)
    assert info.value.path == "$.path.petId" and info.value.reason == "unfilled"


def test_openapi_3_0_request_body_ref_and_array_body() -> None:
    doc = load("oas30-petstore.json")
    result = operation_template(doc, "post", "/user/createWithArray")
    assert result.media_type == "application/json"
    assert (
        isinstance(result.template, list) and result.template[0]["username"] == "{OPTIONAL|string}"
    )
    payload = operation_payload(doc, "post", "/user/createWithArray", [{"username": "ada"}])
    assert payload == [{"username": "ada"}]


def test_openapi_3_1_read_only_is_auto_and_any_of_is_a_choice() -> None:
    doc = load("oas31-train-travel.json")
    booking = operation_template(doc, "post", "/bookings")
    assert booking.template["id"] == "{AUTO|string|format:uuid}"
    booking.template["trip_id"] = "4f4e4e1c-c824-4d63-b37a-d8d698862f1d"
    payload = operation_payload(doc, "post", "/bookings", booking.template, auto=AUTO)
    # readOnly and not required: the server assigns the id, so it is not sent
    assert payload == {"trip_id": "4f4e4e1c-c824-4d63-b37a-d8d698862f1d"}

    pay = operation_template(doc, "post", "/bookings/{bookingId}/payment")
    card, bank = pay.template["source"][ONE_OF]
    assert card["object"] == '{AUTO|string|default:"card"}'
    assert bank["account_type"] == "{FILL_ENUM|individual|company}"
    bank.update(
        name="J. Doe", number="00012345", account_type="company", bank_name="B", country="gb"
    )
    pay.template["source"] = bank
    pay.template["amount"] = 49.99
    payload = operation_payload(doc, "post", "/bookings/{bookingId}/payment", pay.template)
    assert payload["source"]["object"] == "bank_account"
    assert payload["amount"] == 49.99
    body_schema = doc["paths"]["/bookings/{bookingId}/payment"]["post"]["requestBody"]
    validator(body_schema["content"]["application/json"]["schema"], doc).validate(payload)


def test_unknown_paths_and_methods_say_what_exists() -> None:
    doc = load("oas30-petstore.json")
    with pytest.raises(TemplateError) as info:
        operation_template(doc, "get", "/pets/{petId}")
    assert info.value.reason == "operation" and "/pet/{petId}" in info.value.hint
    with pytest.raises(TemplateError) as info:
        operation_template(doc, "patch", "/pet/{petId}")
    assert "GET" in info.value.hint and "DELETE" in info.value.hint


@pytest.mark.parametrize(
    ("document", "says"),
    [(["not", "a", "dict"], "must be a JSON object"), ({"openapi": "3.0.0"}, "no paths")],
)
def test_documents_of_the_wrong_shape_are_refused(document, says) -> None:
    with pytest.raises(TemplateError) as info:
        operation_template(document, "get", "/x")
    assert says in info.value.problem


def test_a_dangling_request_body_ref_is_reported() -> None:
    doc = {
        "openapi": "3.0.3",
        "paths": {"/x": {"post": {"requestBody": {"$ref": "#/components/requestBodies/Nope"}}}},
        "components": {"requestBodies": {"Note": {"content": {}}}},
    }
    with pytest.raises(TemplateError) as info:
        operation_template(doc, "post", "/x")
    assert info.value.reason == "ref" and "Note" in info.value.hint


def test_swagger_2_upload_converts_and_encodes_as_multipart() -> None:
    doc = load("swagger2-petstore.json")
    path = "/pet/{petId}/uploadImage"
    result = operation_template(doc, "post", path)
    filled = {**result.template, "file": "PNG...", "additionalMetadata": "front"}
    payload = operation_payload(doc, "post", path, filled)
    assert payload == {"additionalMetadata": "front", "file": "PNG..."}
    body = request_body(doc, "post", path)
    assert body is not None
    wire = encode_body(payload, body.media_type, body.schema)
    assert b'name="file"; filename="file"\r\nContent-Type: application/octet-stream' in wire
    assert content_type_header(body.media_type, wire).startswith("multipart/form-data; boundary=")


def test_operation_template_and_payload_take_max_depth() -> None:
    doc = {
        "openapi": "3.0.3",
        "paths": {
            "/a": {
                "post": {
                    "requestBody": {
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/A"}}
                        }
                    }
                }
            }
        },
        "components": {
            "schemas": {
                "A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
                "B": {"type": "object", "properties": {"c": {"type": "string"}}},
            }
        },
    }
    assert operation_template(doc, "post", "/a").template == {"b": {"c": "{OPTIONAL|string}"}}
    shallow = operation_template(doc, "post", "/a", max_depth=1)
    assert shallow.template == {"b": "{REF: max_depth}"}
    filled = {"b": {"c": "x"}}
    assert operation_payload(doc, "post", "/a", filled, max_depth=1) == filled
