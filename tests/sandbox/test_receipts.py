"""Receipts: hashing, parse checks per validator, schema summaries, placeholders, refusals."""

import hashlib
import json
import os
import zipfile
from pathlib import Path

import pytest

from activities.harness.receipts import (
    NotRegularFileError,
    build_receipt,
    detect_placeholders,
    hash_file,
    receipt_summary,
    schema_summary,
    validate_parse,
)
from schemas.plan import ArtifactContract

PDF = b"%PDF-1.4\n1 0 obj << /Type /Pages /Count 2 >> endobj\n" + (
    b"2 0 obj << /Type /Page >> endobj\n3 0 obj << /Type/Page >> endobj\ntrailer\n%%EOF\n"
)
DIFF = (
    "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n a = 1\n-b = 2\n+b = 3\n"
    " c = 4\n@@ -10 +10,2 @@\n-x\n+y\n+z\n\\ No newline at end of file\n"
)


def _zip_bytes(tmp_path: Path) -> bytes:
    path = tmp_path / "z.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("a.txt", "hello " * 100)
        archive.writestr("b/c.json", "{}")
    return path.read_bytes()


def _corrupt_zip(tmp_path: Path) -> bytes:
    data = bytearray(_zip_bytes(tmp_path))
    start = data.index(b"a.txt") + len(b"a.txt")  # inside member a.txt's compressed bytes
    data[start + 2] ^= 0xFF
    return bytes(data)


VALID = {
    "json": b'{"a": 1, "b": [1, 2]}',
    "json_rows": b'[{"id": 1, "name": "x"}, {"id": 2, "name": null}]',
    "csv": b'id,name\r\n1,"a, quoted"\r\n2,b\r\n\r\n',
    "tsv": b"id\tname\n1\ta\n2\tb\n",
    "yaml": b"a: 1\nb: [1, 2]\n",
    "html": b"<p>Hello</p>",
    "markdown": "# Title\n\nText \u00e9\n".encode(),
    "pdf": PDF,
    "text": b"",  # empty text is still valid UTF-8
    "unified_diff": DIFF.encode(),
    "parquet": b"PAR1" + b"\x00" * 20 + (20).to_bytes(4, "little") + b"PAR1",
    "binary": b"\x00\xff\x10",
}

INVALID = {
    "json": (b'{"a": 1,\n "b": }', "line 2, column 7"),
    "json_rows": (b'[{"id": 1}, {"id": {"nested": 1}}]', "row 2, key 'id': nested object"),
    "csv": (b"id,name\n1,a\n2\n", "row 2 (line 3) has 1 fields; the header has 2"),
    "tsv": (b"", "no TSV header row"),
    "yaml": (b"a: 1\nb: [1, 2\n", "invalid YAML at line 3"),
    "html": (b"just text, no tags", "no HTML elements"),
    "markdown": (b"  \n\n", "empty Markdown document"),
    "pdf": (b"%PDF-1.4\nno end marker", "no %%EOF marker"),
    "text": (b"ok\xffbad", "not valid UTF-8 at byte 2"),
    "unified_diff": (b"--- a\n+++ b\n@@ -1,2 +1,2 @@\n-x\n+y\n", "is truncated"),
    "parquet": (b"PAR1" + b"\x00" * 20, "no PAR1 magic at the end"),
    "zip": (b"PK\x03\x04 not really", "not a ZIP archive"),
}


def _write(tmp_path: Path, data: bytes | str, name: str = "f") -> Path:
    path = tmp_path / name
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    return path


def _receipt(
    tmp_path: Path, files: list[tuple[str, ArtifactContract | None]], phase: str = "postflight"
):
    return build_receipt(
        tmp_path, files, step_id="s1", step_key="k", contract_hash="sha256:c", phase=phase
    )


# -- hashing ---------------------------------------------------------------------------------------


def test_hash_file_matches_hashlib_over_20_mb(tmp_path: Path) -> None:
    data = os.urandom(1 << 20) * 20 + b"tail"
    path = _write(tmp_path, data)
    assert hash_file(path) == ("sha256:" + hashlib.sha256(data).hexdigest(), len(data))


def test_hash_file_refuses_a_symlink(tmp_path: Path) -> None:
    target = _write(tmp_path, b"x", "target")
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(NotRegularFileError):
        hash_file(tmp_path / "link")


# -- parse validation ------------------------------------------------------------------------------


@pytest.mark.parametrize("validator", sorted(VALID))
def test_valid_samples_parse(tmp_path: Path, validator: str) -> None:
    check = validate_parse(_write(tmp_path, VALID[validator]), validator)
    assert check.ok, check.error
    assert check.error is None


def test_valid_zip_parses(tmp_path: Path) -> None:
    assert validate_parse(_write(tmp_path, _zip_bytes(tmp_path), "ok.zip"), "zip").ok


@pytest.mark.parametrize("validator", sorted(INVALID))
def test_invalid_samples_fail_with_a_located_one_line_error(tmp_path: Path, validator: str) -> None:
    data, expected = INVALID[validator]
    check = validate_parse(_write(tmp_path, data), validator)
    assert not check.ok
    assert check.error is not None and expected in check.error
    assert "\n" not in check.error


@pytest.mark.parametrize(
    ("validator", "data", "expected"),
    [
        ("json", b"[1, NaN]", "non-standard JSON constant NaN"),
        ("json", b"\xff{}", "not valid UTF-8 at byte 0"),
        ("json_rows", b'{"a": 1}', "top level is object"),
        ("json_rows", b"[1, 2]", "row 1 is integer, not an object"),
        ("yaml", b"a: 1\n---\nb: 2\n", "invalid YAML at line 2"),
        ("yaml", b"", "empty YAML document"),
        ("csv", b'id,name\n1,"unterminated\n', "malformed CSV"),
        ("csv", b"a,a\n1,2\n", "duplicate column 'a'"),
        ("pdf", b"hello %%EOF", "does not start with %PDF-"),
        ("unified_diff", b"just words\n", "no ---/+++ file header"),
        ("unified_diff", b"--- a\n+++ b\n", "no @@ hunk"),
        ("unified_diff", b"--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y\n+z\n", "line 6 is a change line"),
        ("unified_diff", b"--- a\n+++ b\n@@ -1 +1,2 @@\n-x\n-y\n+z\n", "more lines than"),
        ("unified_diff", b"--- a\n+++ b\n@@ -1 +1,2 @@\n-x\nzz\n", "ends early at line 5"),
        ("unified_diff", b"@@ -1 +1 @@\n-x\n+y\n", "before any ---/+++"),
        ("parquet", b"PAR", "too small for Parquet"),
        ("markdown", b"\xe2\x82", "not valid UTF-8 at byte 0"),
        ("html", b"", "no HTML elements"),
        ("nope", b"x", "unknown parse validator"),
    ],
)
def test_more_invalid_samples(tmp_path: Path, validator: str, data: bytes, expected: str) -> None:
    check = validate_parse(_write(tmp_path, data), validator)
    assert not check.ok
    assert check.error is not None and expected in check.error, check.error


def test_corrupt_zip_member_is_reported(tmp_path: Path) -> None:
    check = validate_parse(_write(tmp_path, _corrupt_zip(tmp_path), "bad.zip"), "zip")
    assert not check.ok
    assert check.error is not None and ("a.txt" in check.error or "corrupt" in check.error)


def test_utf8_error_offset_across_chunks(tmp_path: Path) -> None:
    # The bad byte sits past the first 4 MiB read, after a split multi-byte character.
    data = b"a" * ((4 << 20) - 1) + "\u00e9".encode() + b"\xff"
    check = validate_parse(_write(tmp_path, data), "text")
    assert check.error == f"not valid UTF-8 at byte {(4 << 20) + 1}"


# -- the parse limit -------------------------------------------------------------------------------


def test_json_above_the_parse_limit_is_not_reported_valid(tmp_path: Path) -> None:
    path = _write(tmp_path, json.dumps([{"id": i} for i in range(2000)]))
    check = validate_parse(path, "json", max_parse_bytes=1000)
    assert not check.ok
    assert check.error is not None and check.error.startswith("larger than the parse limit (")
    assert validate_parse(path, "json").ok


def test_csv_above_the_parse_limit_is_still_streamed(tmp_path: Path) -> None:
    rows = "".join(f"{i},x\n" for i in range(5000))
    assert validate_parse(_write(tmp_path, "id,v\n" + rows), "csv", max_parse_bytes=100).ok
    bad = _write(tmp_path, "id,v\n" + rows + "1,2,3\n", "bad.csv")
    check = validate_parse(bad, "csv", max_parse_bytes=100)
    assert not check.ok and check.error is not None and "row 5001" in check.error


def test_yaml_above_the_parse_limit(tmp_path: Path) -> None:
    check = validate_parse(_write(tmp_path, "a: 1\n" * 100), "yaml", max_parse_bytes=10)
    assert not check.ok and check.error is not None and "parse limit" in check.error


# -- schema summaries ------------------------------------------------------------------------------


def test_json_object_summary(tmp_path: Path) -> None:
    doc = {"b": [1], "a": "2024-05-01", "c": None, "d": {"x": 1}, "e": True, "f": 1.5}
    summary = schema_summary(_write(tmp_path, json.dumps(doc)), "json")
    assert summary == {
        "type": "object",
        "key_count": 6,
        "keys": ["a", "b", "c", "d", "e", "f"],
        "key_types": {
            "a": "date",
            "b": "array",
            "c": "null",
            "d": "object",
            "e": "boolean",
            "f": "number",
        },
    }


def test_json_rows_summary_types_nulls_and_keys(tmp_path: Path) -> None:
    rows = [
        {"id": 1, "when": "2024-01-01T10:00:00Z", "amount": 1, "flag": True, "note": None},
        {"id": 2, "when": "2024-01-02T10:00:00+01:00", "amount": 2.5, "flag": False},
        {"id": 3, "when": "2024-01-03 10:00", "amount": 3, "flag": "yes", "note": "x"},
    ]
    summary = schema_summary(_write(tmp_path, json.dumps(rows)), "json_rows")
    assert summary["type"] == "array"
    assert summary["row_count"] == summary["rows_sampled"] == 3
    cols = {c["name"]: c for c in summary["columns"]}
    assert cols["id"] == {"name": "id", "type": "integer", "null_count": 0}
    assert cols["when"]["type"] == "datetime"
    assert cols["amount"]["type"] == "number"
    assert cols["flag"]["type"] == "mixed"
    assert cols["note"] == {"name": "note", "type": "string", "null_count": 2}  # absent = null
    assert ["id"] in summary["candidate_keys"] and ["when"] in summary["candidate_keys"]
    assert ["note"] not in summary["candidate_keys"]


def test_candidate_keys_distinguish_types(tmp_path: Path) -> None:
    rows = [{"k": 1}, {"k": 1.0}, {"k": True}, {"k": "1"}]
    summary = schema_summary(_write(tmp_path, json.dumps(rows)), "json_rows")
    assert summary["candidate_keys"] == [["k"]]


def test_composite_key_only_when_no_single_key(tmp_path: Path) -> None:
    csv_text = "region,month,total\neu,2024-01,5\neu,2024-02,5\nus,2024-01,7\nus,2024-02,5\n"
    summary = schema_summary(_write(tmp_path, csv_text), "csv")
    assert summary["candidate_keys"] == [["region", "month"]]
    with_id = "id,region,month\n1,eu,a\n2,eu,b\n3,us,a\n"
    assert schema_summary(_write(tmp_path, with_id, "b.csv"), "csv")["candidate_keys"] == [["id"]]


def test_csv_summary_infers_types_from_text(tmp_path: Path) -> None:
    text = (
        "i,d,b,day,ts,s,zip,e\n"
        "1,1.5,true,2024-01-31,2024-01-31T08:00:00,x,00123,\n"
        "-2,3,FALSE,2024-02-29,2024-02-01 09:30,y,00456,\n"
        "3,1e3,false,2024-03-01,2024-03-01T00:00:00Z,2024-01-01,00789,\n"
    )
    summary = schema_summary(_write(tmp_path, text), "csv")
    types = {c["name"]: c["type"] for c in summary["columns"]}
    assert types == {
        "i": "integer",
        "d": "number",
        "b": "boolean",
        "day": "date",
        "ts": "datetime",
        "s": "string",
        "zip": "string",
        "e": "null",
    }
    assert {c["name"]: c["null_count"] for c in summary["columns"]}["e"] == 3
    assert summary["type"] == "table" and summary["row_count"] == 3


def test_an_impossible_date_is_a_string(tmp_path: Path) -> None:
    summary = schema_summary(_write(tmp_path, "d\n2024-02-30\n"), "csv")
    assert summary["columns"][0]["type"] == "string"


def test_summary_sampling_is_bounded(tmp_path: Path) -> None:
    text = "id,v\n" + "".join(f"{i},{i % 3}\n" for i in range(50)) + "x,y\n"
    summary = schema_summary(_write(tmp_path, text), "csv", max_rows=10)
    assert summary["row_count"] == 51 and summary["rows_sampled"] == 10
    assert summary["columns"][0]["type"] == "integer"  # "x" was never sampled


def test_yaml_summary_is_like_json(tmp_path: Path) -> None:
    summary = schema_summary(_write(tmp_path, "b: 2024-01-01\na: [1]\n"), "yaml")
    assert summary["keys"] == ["a", "b"]
    assert summary["key_types"] == {"a": "array", "b": "date"}


def test_html_summary(tmp_path: Path) -> None:
    page = (
        "<!doctype html><html><head><title> Q3\n report </title>"
        "<link rel=stylesheet href='https://cdn.example/x.css'>"
        "<style>@import 'http://fonts.example/f.css'; p { background: url(//img.example/a.png) }"
        "</style></head><body><a href='#top'>top</a><a href='local.html'>x</a>"
        "<img src='data:image/png;base64,AA' srcset='https://img.example/2x.png 2x, b.png 1x'>"
        "</body></html>"
    )
    summary = schema_summary(_write(tmp_path, page), "html")
    assert summary["title"] == "Q3 report"
    assert summary["element_count"] == 9
    assert summary["has_script"] is False
    assert summary["external_refs"] == [
        "https://cdn.example/x.css",
        "http://fonts.example/f.css",
        "//img.example/a.png",
        "https://img.example/2x.png",
    ]


@pytest.mark.parametrize(
    "page",
    ["<script>1</script>", "<button onclick='go()'>x</button>", "<a href='javascript:go()'>x</a>"],
)
def test_html_scripts_in_any_form(tmp_path: Path, page: str) -> None:
    assert schema_summary(_write(tmp_path, page), "html")["has_script"] is True


def test_text_pdf_and_failure_summaries(tmp_path: Path) -> None:
    assert schema_summary(_write(tmp_path, "a\nb\n\u00e9"), "markdown") == {
        "line_count": 3,
        "char_count": 5,
    }
    assert schema_summary(_write(tmp_path, "a\n", "t"), "text") == {
        "line_count": 1,
        "char_count": 2,
    }
    assert schema_summary(_write(tmp_path, PDF, "p.pdf"), "pdf") == {"pages": 2}
    assert schema_summary(_write(tmp_path, b"{", "bad.json"), "json") == {}


def test_pdf_page_count_across_chunk_boundaries(tmp_path: Path) -> None:
    page = b"<< /Type /Page >>"
    data = b"%PDF-1.7\n" + b"x" * ((4 << 20) - 9 - 8) + page + b"y" * 100 + page + b"\n%%EOF"
    assert schema_summary(_write(tmp_path, data), "pdf") == {"pages": 2}


# -- placeholders ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("validator", "data", "expected"),
    [
        ("json", '{"summary": "TODO", "body": "Lorem  Ipsum dolor"}', ["TODO", "lorem ipsum"]),
        ("json_rows", '[{"v": "{FILL|amount}"}, {"v": "{AUTO|id}"}]', ["{FILL|", "{AUTO|"]),
        ("csv", "a,b\n{OPTIONAL|x},{FILL_ENUM|y}\n", ["{FILL_ENUM|", "{OPTIONAL|"]),
        ("html", "<p>&lt;insert chart here&gt;</p><p>PLACEHOLDER</p>", ["PLACEHOLDER", "<insert"]),
        ("markdown", "# Report\n\n<Insert summary>\n\nTODO: numbers\n", ["TODO", "<insert"]),
        ("json", '{"todos": [], "placeholder": "JSONPlaceholder"}', []),
        ("html", '<input placeholder="name"><p>todo list</p>', []),
    ],
)
def test_placeholder_sentinels(
    tmp_path: Path, validator: str, data: str, expected: list[str]
) -> None:
    assert detect_placeholders(_write(tmp_path, data), validator) == expected


@pytest.mark.parametrize(
    ("validator", "data", "expected"),
    [
        ("csv", "id,name\n", ["empty rows"]),
        ("tsv", "id\tname\n\n", ["empty rows"]),
        ("json_rows", "[ ]", ["empty rows"]),
        ("json", "{}", ["empty document"]),
        ("json", "[]", ["empty document"]),
        ("yaml", "{}\n", ["empty document"]),
        ("csv", "id\n1\n", []),
        ("json", "[0]", []),
    ],
)
def test_structural_emptiness(
    tmp_path: Path, validator: str, data: str, expected: list[str]
) -> None:
    assert detect_placeholders(_write(tmp_path, data), validator) == expected


def test_binary_formats_are_not_scanned(tmp_path: Path) -> None:
    path = _write(tmp_path, b"%PDF-1.4 TODO PLACEHOLDER %%EOF")
    assert detect_placeholders(path, "pdf") == []
    assert detect_placeholders(path, "binary") == []


def test_scan_is_bounded(tmp_path: Path) -> None:
    path = _write(tmp_path, "x" * 2000 + " TODO")
    assert detect_placeholders(path, "text", max_scan_bytes=1000) == []
    assert detect_placeholders(path, "text") == ["TODO"]


# -- receipts --------------------------------------------------------------------------------------


def test_receipt_for_a_missing_file(tmp_path: Path) -> None:
    receipt = _receipt(tmp_path, [("output/missing.json", None)])
    [f] = receipt.files
    assert f.model_dump() == {
        "path": "output/missing.json",
        "exists": False,
        "size_bytes": None,
        "sha256": None,
        "kind_key": None,
        "parse_validation": None,
        "schema_summary": {},
        "placeholder_sentinels": [],
    }


def test_receipt_for_good_outputs(tmp_path: Path) -> None:
    (tmp_path / "output").mkdir()
    data = b"id,amount\n1,2.5\n2,TODO\n"
    (tmp_path / "output" / "t.csv").write_bytes(data)
    contract = ArtifactContract(kind_key="table.csv", parse_validator="csv")
    receipt = _receipt(tmp_path, [("output/t.csv", contract)])
    assert (receipt.step_id, receipt.phase) == ("s1", "postflight")
    [f] = receipt.files
    assert f.exists and f.size_bytes == len(data)
    assert f.sha256 == "sha256:" + hashlib.sha256(data).hexdigest()
    assert f.kind_key == "table.csv"
    assert f.parse_validation is not None and f.parse_validation.ok
    assert f.schema_summary["row_count"] == 2
    assert f.placeholder_sentinels == ["TODO"]
    assert receipt_summary(receipt) == {
        "output/t.csv": {
            "exists": True,
            "size_bytes": len(data),
            "sha256": f.sha256,
            "ok": True,
            "error": None,
            "rows": 2,
            "placeholders": ["TODO"],
        }
    }
    preflight = _receipt(tmp_path, [("output/t.csv", contract)], phase="preflight")
    assert preflight.files[0].placeholder_sentinels == []


def test_receipt_infers_the_kind_from_the_extension(tmp_path: Path) -> None:
    for name, data in (("r.md", "# x"), ("blob.xyz", "\x00"), ("a.rows.json", "[{}]")):
        _write(tmp_path, data, name)
    receipt = _receipt(tmp_path, [("r.md", None), ("blob.xyz", None), ("a.rows.json", None)])
    assert [f.kind_key for f in receipt.files] == [
        "report.markdown",
        "file.binary",
        "table.json_rows",
    ]
    assert all(f.parse_validation and f.parse_validation.ok for f in receipt.files)


def test_symlink_is_refused_without_being_followed(tmp_path: Path) -> None:
    secret = tmp_path.parent / f"{tmp_path.name}-secret.json"
    secret.write_text('{"token": "TODO"}')
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "link.json").symlink_to(secret)
    (tmp_path / "dirlink").symlink_to(tmp_path / "out")
    _write(tmp_path / "out", "{}", "real.json")
    receipt = _receipt(tmp_path, [("out/link.json", None), ("dirlink/real.json", None)])
    for f in receipt.files:
        assert f.exists
        assert f.sha256 is None and f.size_bytes is None and f.schema_summary == {}
        assert f.placeholder_sentinels == []
        assert f.parse_validation is not None and not f.parse_validation.ok
        assert f.parse_validation.error is not None
        assert f.parse_validation.error.startswith("not a regular file")
    assert validate_parse(tmp_path / "out" / "link.json", "json").error == (
        "not a regular file (symbolic link)"
    )
    secret.unlink()


@pytest.mark.timeout(10)
def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.csv")
    (tmp_path / "dir.json").mkdir()
    receipt = _receipt(tmp_path, [("pipe.csv", None), ("dir.json", None)])
    errors = [f.parse_validation.error for f in receipt.files if f.parse_validation]
    assert errors == ["not a regular file (FIFO)", "not a regular file (directory)"]
    assert all(f.exists and f.sha256 is None for f in receipt.files)
    assert detect_placeholders(tmp_path / "pipe.csv", "csv") == []


def test_paths_must_stay_inside_the_workspace(tmp_path: Path) -> None:
    for bad in ("../x.json", "/etc/passwd", ""):
        with pytest.raises(ValueError, match="inside the workspace"):
            _receipt(tmp_path, [(bad, None)])


@pytest.mark.parametrize(
    ("name", "data", "contract", "expected"),
    [
        (
            "a.json",
            "[1]",
            ArtifactContract(required_top_level_type="object"),
            "'object': found array",
        ),
        ("a.json", "{}", ArtifactContract(required_top_level_type="array"), "found object"),
        ("a.json", '"x"', ArtifactContract(required_top_level_type="object"), "found string"),
        ("a.md", "# x", ArtifactContract(required_top_level_type="table"), "has no top-level type"),
        (
            "a.csv",
            "a,b\n1,2\n",
            ArtifactContract(required_columns=["a", "c", "d"]),
            "columns: c, d",
        ),
        (
            "a.json",
            '[{"id": 1, "v": 2}, {"id": 2}]',
            ArtifactContract(parse_validator="json_rows", required_columns=["id", "v"]),
            "row 2 lacks required columns: v",
        ),
        ("a.json", '{"id": 1}', ArtifactContract(required_columns=["id"]), "need rows of objects"),
        ("a.txt", "x", ArtifactContract(required_columns=["id"]), "need rows of objects"),
    ],
)
def test_contract_shape_violations(
    tmp_path: Path, name: str, data: str, contract: ArtifactContract, expected: str
) -> None:
    _write(tmp_path, data, name)
    [f] = _receipt(tmp_path, [(name, contract)]).files
    assert f.parse_validation is not None and not f.parse_validation.ok
    assert f.parse_validation.error is not None and expected in f.parse_validation.error
    assert f.sha256 is not None  # the file was still hashed and summarized


@pytest.mark.parametrize(
    ("name", "data", "contract"),
    [
        ("a.json", '[{"id": 1}]', ArtifactContract(required_top_level_type="table")),
        ("a.json", '[{"id": 1}]', ArtifactContract(required_top_level_type="array")),
        ("a.csv", "id,v\n1,2\n", ArtifactContract(required_top_level_type="table")),
        ("a.csv", "id,v\n", ArtifactContract(required_columns=["v", "id"])),
        ("a.json", "[]", ArtifactContract(parse_validator="json_rows", required_columns=["id"])),
    ],
)
def test_contract_shapes_met(
    tmp_path: Path, name: str, data: str, contract: ArtifactContract
) -> None:
    _write(tmp_path, data, name)
    [f] = _receipt(tmp_path, [(name, contract)]).files
    assert f.parse_validation is not None and f.parse_validation.ok, f.parse_validation


def test_a_contract_kind_without_a_validator_picks_the_kinds_validator(tmp_path: Path) -> None:
    _write(tmp_path, '[{"id": 1}, {"id": [1]}]', "x.json")
    [f] = _receipt(tmp_path, [("x.json", ArtifactContract(kind_key="table.json_rows"))]).files
    assert f.parse_validation is not None and not f.parse_validation.ok  # json_rows, not json
