"""The round-trip property: fill every FILL token validly, convert back, validate the payload.

Over generated schemas (JSON Schema 2020-12 and OpenAPI 3.0) and over every request body of
the public OpenAPI documents in tests/data/openapi.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.imprint import (
    TemplateError,
    constraint_notes,
    operation_payload,
    operation_template,
    request_body,
    schema_to_template,
    template_to_payload,
)
from tests.imprint.conftest import AUTO, DOCUMENTS, load, operations, relaxed, validator
from tests.imprint.filler import fill
from tests.imprint.schemas import JSON_2020, OAS30, documents

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

# Operations whose schema has a oneOf with overlapping alternatives (no required or closed
# property tells them apart), so *no* payload is valid under exactly one alternative. For
# these, the payload is checked against the chosen alternative (oneOf read as anyOf) and
# strict validation may fail only with "valid under each of".
OVERLAPPING_ONE_OF = {
    ("oas30-complex-nesting.json", "put", "/anything/top-level-array"),
    ("oas30-complex-nesting.json", "post", "/top-level-object/of-everything"),
    ("oas30-complex-nesting.json", "post", "/multischema/of-everything"),
    ("oas30-discriminators.json", "patch", "/discriminator-with-mapping"),
    ("oas30-discriminators.json", "patch", "/discriminator-with-no-mapping"),
    ("oas30-discriminators.json", "patch", "/embedded-discriminator"),
    ("oas30-discriminators.json", "patch", "/oneof-allof-top-level-disc"),
    ("oas30-discriminators.json", "patch", "/nested-one-of-object-with-nested-one-of"),
    ("oas30-discriminators.json", "patch", "/mapping-with-duplicate-schemas"),
    ("oas30-discriminators.json", "patch", "/mapping-of-schema-names"),
    ("oas30-discriminators.json", "patch", "/improper-discriminator-placement"),
    ("oas30-discriminators.json", "post", "/potentially-undefined-formData"),
    ("oas30-polymorphism.json", "patch", "/pets"),
    ("oas30-polymorphism.json", "post", "/anything/one-of-object"),
    ("oas30-polymorphism.json", "post", "/anything/one-of-object-ref"),
    ("oas30-polymorphism.json", "post", "/one-of-complex"),
    ("oas30-polymorphism.json", "post", "/anything/nested-one-of-object-ref"),
    ("oas30-polymorphism.json", "post", "/anything/nested-one-of-ref"),
    ("oas30-polymorphism.json", "post", "/anything/nested-one-of-object-with-nested-one-of"),
    ("oas30-polymorphism.json", "post", "/one-of-with-type"),
}
# Schemas no finite payload satisfies, with the error the conversion must give.
UNSATISFIABLE = {
    # TreeNode requires `parent`, itself a TreeNode: every valid tree would be infinite.
    ("oas30-circular-request-bodies.json", "post", "/direct"): "$.parent",
}
# allOf members of contradictory types: templating must refuse with the member's pointer.
CONTRADICTORY = {
    (doc, method, "/anything/quirks/polymorphism")
    for doc in ("oas30-schema-types.json", "oas31-schema-types.json")
    for method in ("put", "post", "patch")
}


@pytest.mark.parametrize("dialect", [JSON_2020, OAS30])
@SETTINGS
@given(data=st.data())
def test_generated_schemas_round_trip(dialect: str, data: st.DataObject) -> None:
    schema, document = data.draw(documents(dialect))
    template = schema_to_template(schema, document=document)
    filled = fill(data.draw, template, constraint_notes(schema, document=document))
    payload = template_to_payload(filled, schema, document=document, auto=AUTO)
    errors = [e.message for e in validator(schema, document).iter_errors(payload)]
    assert not errors, (errors, json.dumps(filled), json.dumps(payload))


def _body_operations() -> list[tuple[str, str, str]]:
    found = []
    for name in DOCUMENTS:
        doc = load(name)
        for method, path in operations(name):
            if request_body(doc, method, path) is not None:
                found.append((name, method, path))
    return found


BODY_OPERATIONS = _body_operations()


def test_documents_cover_the_dialects_and_many_bodies() -> None:
    names = {name for name, _, _ in BODY_OPERATIONS}
    assert {"swagger2-petstore.json", "swagger2-schema-circular.json"} <= names
    assert {"oas30-schema-circular.json", "oas30-circular-request-bodies.json"} <= names
    assert {"oas31-train-travel.json", "oas30-star-trek.json"} <= names
    assert len(BODY_OPERATIONS) > 150


@pytest.mark.parametrize(("name", "method", "path"), BODY_OPERATIONS)
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_document_bodies_round_trip(name: str, method: str, path: str, data: st.DataObject) -> None:
    doc = load(name)
    key = (name, method, path)
    if key in CONTRADICTORY:
        with pytest.raises(TemplateError) as info:
            operation_template(doc, method, path)
        assert info.value.reason == "schema" and "allOf" in info.value.path
        return
    body = request_body(doc, method, path)
    assert body is not None
    template = operation_template(doc, method, path).template
    filled = fill(data.draw, template, constraint_notes(body.schema, document=doc))
    if key in UNSATISFIABLE:
        with pytest.raises(TemplateError) as info:
            operation_payload(doc, method, path, filled, auto=AUTO)
        assert info.value.path == UNSATISFIABLE[key]
        return
    payload = operation_payload(doc, method, path, filled, auto=AUTO)
    strict = [e for e in validator(body.schema, doc).iter_errors(payload)]
    if key not in OVERLAPPING_ONE_OF:
        assert not strict, ([e.message for e in strict], json.dumps(filled))
        return
    loose = list(validator(relaxed(body.schema), relaxed(doc)).iter_errors(payload))
    assert not loose, ([e.message for e in loose], json.dumps(filled))
    assert all("is valid under each of" in e.message for e in strict)
