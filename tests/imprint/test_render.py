"""render_template: the 200-character rule (seed §2.2), header first, skeleton after."""

from __future__ import annotations

import json

from compiler.imprint import Header, render_template, schema_to_template

TEMPLATE = {
    "customer": {
        "id": "{AUTO|string|format:uuid}",
        "name": "{FILL|string}",
        "status": "{FILL_ENUM|active|paused}",
        "tags": ["{OPTIONAL|string}"],
    }
}


def _skeleton(text: str) -> object:
    return json.loads(text.split("Template:\n", 1)[1])


def test_each_slot_sits_at_its_offset() -> None:
    header = Header(
        structure="POST /customers body: JSON object",
        severity="REQUIRED",
        headline="create one customer",
        constraints=("status is active|paused",),
        next_actions=("reply with the filled JSON only",),
    )
    text = render_template(TEMPLATE, header=header)
    assert text[0:50].startswith("POST /customers body: JSON object")
    assert text[50:100].startswith("REQUIRED: create one customer")
    assert text[100:150].startswith("status is active|paused")
    assert text[150:200].startswith("reply with the filled JSON only")
    assert [text[i] for i in (49, 99, 149, 199)] == ["\n"] * 4
    assert text[200:].startswith("Template:\n")
    assert _skeleton(text) == TEMPLATE


def test_long_slots_are_cut_and_repeated_after_the_header() -> None:
    long = "x" * 80
    text = render_template(TEMPLATE, header=Header(structure=long, headline="h"))
    assert text[0:50] == "x" * 48 + "…\n"
    assert text[200:].startswith(f"Details:\n- {long}\n")
    assert _skeleton(text) == TEMPLATE


def test_a_default_header_counts_what_must_be_filled() -> None:
    text = render_template(TEMPLATE)
    assert text[0:50].startswith("JSON object template, 4 tokens")
    assert text[50:100].startswith("REQUIRED: fill 2 required token(s)")
    assert len(text.split("Template:\n")[0]) == 200


def test_a_text_header_is_read_as_four_slot_lines() -> None:
    text = render_template(
        TEMPLATE, header="Body of POST /x\nERROR: 2 fields wrong\nname: text\nfix"
    )
    assert text[0:50].startswith("Body of POST /x")
    assert text[50:100].startswith("ERROR: 2 fields wrong")
    assert text[100:150].startswith("name: text")
    assert text[150:200].startswith("fix")


def test_rendering_a_generated_template() -> None:
    schema = {"type": "array", "items": {"type": "integer", "minimum": 1}}
    text = render_template(schema_to_template(schema))
    assert text[0:50].startswith("JSON array template, 1 tokens")
    assert _skeleton(text) == ["{FILL|integer|range:1-}"]
