"""Tests for the stdlib adapters: real conversions, edge cases and script entry points."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import subprocess
import sys
from types import ModuleType
from typing import Any

import pytest
import yaml

from schemas.typesystem import Adapter

ADAPTERS_DIR = pathlib.Path(__file__).resolve().parents[2] / "stdlib" / "adapters"


def load(module: str) -> ModuleType:
    # Adapters are loaded by path, the way they run frozen in the sandbox (no package).
    spec = importlib.util.spec_from_file_location(
        f"forge_adapter_{module}", ADAPTERS_DIR / f"{module}.py"
    )
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


csv_adapter = load("table_csv_to_json_rows")
tsv_adapter = load("table_tsv_to_json_rows")
rows_to_csv = load("table_json_rows_to_csv")
yaml_adapter = load("object_yaml_to_json")
md_adapter = load("report_markdown_to_html")


def write(path: pathlib.Path, text: str, encoding: str = "utf-8") -> pathlib.Path:
    # newline="" so test fixtures keep exactly the line endings written here.
    with path.open("w", encoding=encoding, newline="") as handle:
        handle.write(text)
    return path


def read_json(path: pathlib.Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# --- registry -----------------------------------------------------------------------------


def test_adapters_yaml_validates_and_modules_exist() -> None:
    data = yaml.safe_load((ADAPTERS_DIR / "adapters.yaml").read_text(encoding="utf-8"))
    adapters = [Adapter.model_validate(item) for item in data["adapters"]]
    assert {a.adapter_id for a in adapters} == {
        "adapt.table.csv-to-json_rows",
        "adapt.table.tsv-to-json_rows",
        "adapt.table.json_rows-to-csv",
        "adapt.object.yaml-to-json",
        "adapt.report.markdown-to-html",
    }
    for adapter in adapters:
        assert (ADAPTERS_DIR / f"{adapter.module}.py").is_file(), adapter.module
        assert callable(load(adapter.module).transform), adapter.module
        # The id spells out the conversion, so it must agree with the declared kinds.
        _, family, conversion = adapter.adapter_id.split(".", 2)
        source, target = conversion.split("-to-")
        assert adapter.from_kind == f"{family}.{source}"
        assert adapter.to_kind == f"{family}.{target}"


# --- CSV / TSV -> json_rows ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", 42),
        ("-7", -7),
        ("0", 0),
        ("3.25", 3.25),
        ("-0.5", -0.5),
        ("true", True),
        ("FALSE", False),
        ("True", True),
        ("", None),
        ("007", "007"),
        ("1e5", "1e5"),
        ("1.50", "1.50"),
        ("-0", "-0"),
        ("+5", "+5"),
        (" 5", " 5"),
        ("1,000", "1,000"),
        ("NaN", "NaN"),
        ("inf", "inf"),
        ("١٢", "١٢"),
        ("9007199254740993", "9007199254740993"),
        ("yes", "yes"),
    ],
)
def test_cell_typing_is_conservative(text: str, expected: Any) -> None:
    value = csv_adapter.type_cell(text)
    assert value == expected
    assert type(value) is type(expected)


def test_csv_to_json_rows_basic(tmp_path: pathlib.Path) -> None:
    src = write(
        tmp_path / "in.csv", "id,name,score,active,note\n1,Ada,9.5,true,\n2,Bob,7,false,hi\n"
    )
    dst = tmp_path / "out.json"
    summary = csv_adapter.transform(src, dst)
    assert summary == {"rows": 2, "columns": ["id", "name", "score", "active", "note"]}
    rows = read_json(dst)
    assert rows == [
        {"id": 1, "name": "Ada", "score": 9.5, "active": True, "note": None},
        {"id": 2, "name": "Bob", "score": 7, "active": False, "note": "hi"},
    ]
    assert list(rows[0]) == ["id", "name", "score", "active", "note"]
    # indent=2 output, not a single line.
    assert dst.read_text(encoding="utf-8").startswith("[\n  {\n")


def test_csv_bom_is_stripped_from_first_header(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "in.csv", "zip,city\n02134,Boston\n", encoding="utf-8-sig")
    assert src.read_bytes().startswith(b"\xef\xbb\xbf")
    csv_adapter.transform(src, tmp_path / "out.json")
    assert read_json(tmp_path / "out.json") == [{"zip": "02134", "city": "Boston"}]


def test_csv_quoted_commas_newlines_and_quotes(tmp_path: pathlib.Path) -> None:
    src = write(
        tmp_path / "in.csv",
        "id,address,quote\r\n"
        '1,"12 Main St, Apt 4","line one\r\nline two"\r\n'
        '2,"x","say ""hi"""\r\n',
    )
    summary = csv_adapter.transform(src, tmp_path / "out.json")
    assert summary["rows"] == 2
    assert read_json(tmp_path / "out.json") == [
        {"id": 1, "address": "12 Main St, Apt 4", "quote": "line one\r\nline two"},
        {"id": 2, "address": "x", "quote": 'say "hi"'},
    ]


def test_csv_unicode_is_written_unescaped(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "in.csv", "name,city\nZoë,Łódź\n名前,東京\n")
    csv_adapter.transform(src, tmp_path / "out.json")
    text = (tmp_path / "out.json").read_text(encoding="utf-8")
    assert "Łódź" in text and "東京" in text and "\\u" not in text
    assert json.loads(text)[1] == {"name": "名前", "city": "東京"}


def test_csv_short_row_fills_null(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "in.csv", "a,b,c\n1,2\n")
    csv_adapter.transform(src, tmp_path / "out.json")
    assert read_json(tmp_path / "out.json") == [{"a": 1, "b": 2, "c": None}]


def test_csv_ragged_row_names_line(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "in.csv", "a,b\n1,2\n3,4\n5,6,7\n")
    with pytest.raises(ValueError, match=r"line 4\b.*3 fields.*header has 2"):
        csv_adapter.transform(src, tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()


def test_csv_duplicate_header_names_index(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "in.csv", "id,name,id\n1,a,2\n")
    with pytest.raises(ValueError, match=r"column index 2 .*duplicates column index 0.*'id'"):
        csv_adapter.transform(src, tmp_path / "out.json")


def test_csv_empty_header_names_index(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "in.csv", "id,,name\n1,2,3\n")
    with pytest.raises(ValueError, match=r"column index 1 .*empty name"):
        csv_adapter.transform(src, tmp_path / "out.json")


def test_csv_empty_file_needs_header(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "in.csv", "")
    with pytest.raises(ValueError, match="header row is required"):
        csv_adapter.transform(src, tmp_path / "out.json")


def test_csv_header_only_gives_empty_array(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "in.csv", "a,b\n")
    assert csv_adapter.transform(src, tmp_path / "out.json") == {"rows": 0, "columns": ["a", "b"]}
    assert read_json(tmp_path / "out.json") == []


def test_tsv_to_json_rows(tmp_path: pathlib.Path) -> None:
    src = write(
        tmp_path / "in.tsv",
        'sku\tdesc\tqty\n0042\tbolt, steel\t10\nA-1\t"tab\there"\t\n',
        encoding="utf-8-sig",
    )
    summary = tsv_adapter.transform(src, tmp_path / "out.json")
    assert summary == {"rows": 2, "columns": ["sku", "desc", "qty"]}
    assert read_json(tmp_path / "out.json") == [
        {"sku": "0042", "desc": "bolt, steel", "qty": 10},
        {"sku": "A-1", "desc": "tab\there", "qty": None},
    ]


def test_tsv_errors_match_csv(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match=r"column index 1 .*duplicates"):
        tsv_adapter.transform(write(tmp_path / "d.tsv", "a\ta\n1\t2\n"), tmp_path / "o.json")
    with pytest.raises(ValueError, match=r"line 2\b"):
        tsv_adapter.transform(write(tmp_path / "r.tsv", "a\tb\n1\t2\t3\n"), tmp_path / "o.json")


# --- json_rows -> CSV ---------------------------------------------------------------------


def test_json_rows_to_csv_union_of_columns(tmp_path: pathlib.Path) -> None:
    rows = [
        {"id": 1, "name": "Ada"},
        {"id": 2, "active": True, "score": 0.1},
        {"name": "Cy", "id": 3, "active": False, "score": None},
    ]
    src = write(tmp_path / "in.json", json.dumps(rows))
    summary = rows_to_csv.transform(src, tmp_path / "out.csv")
    assert summary == {"rows": 3, "columns": ["id", "name", "active", "score"]}
    assert (tmp_path / "out.csv").read_text(encoding="utf-8") == (
        "id,name,active,score\n1,Ada,,\n2,,true,0.1\n3,Cy,false,\n"
    )


def test_json_rows_to_csv_quotes_when_needed(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "in.json", json.dumps([{"a": "x, y", "b": 'say "hi"', "c": "l1\nl2"}]))
    rows_to_csv.transform(src, tmp_path / "out.csv")
    assert (tmp_path / "out.csv").read_text(encoding="utf-8") == (
        'a,b,c\n"x, y","say ""hi""","l1\nl2"\n'
    )


def test_json_rows_to_csv_empty_array(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "in.json", "[]")
    assert rows_to_csv.transform(src, tmp_path / "out.csv") == {"rows": 0, "columns": []}
    assert (tmp_path / "out.csv").read_text(encoding="utf-8") == ""


@pytest.mark.parametrize(
    ("payload", "pattern"),
    [
        ([{"a": 1}, [1, 2]], r"row index 1: expected an object, got list"),
        ([{"a": 1}, {"a": 2}, "x"], r"row index 2: expected an object, got str"),
        ([{"a": 1}, {"a": {"b": 2}}], r"row index 1: field 'a' is a nested dict"),
        ([{"a": [1]}], r"row index 0: field 'a' is a nested list"),
        ({"a": 1}, r"expected a JSON array"),
    ],
)
def test_json_rows_to_csv_rejects_non_flat(
    tmp_path: pathlib.Path, payload: Any, pattern: str
) -> None:
    src = write(tmp_path / "in.json", json.dumps(payload))
    with pytest.raises(ValueError, match=pattern):
        rows_to_csv.transform(src, tmp_path / "out.csv")


def test_json_rows_to_csv_rejects_nan(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "in.json", '[{"a": NaN}]')
    with pytest.raises(ValueError, match="NaN"):
        rows_to_csv.transform(src, tmp_path / "out.csv")


def test_csv_json_rows_csv_round_trip_preserves_cells(tmp_path: pathlib.Path) -> None:
    original = (
        "id,zip,amount,ratio,flag,empty,text,big\n"
        '1,02134,1e5,0.1,true,,"comma, and ""quote""",9007199254740993\n'
        '-2,00000,1.50,-3.75,false,,"multi\nline",12345678901234567890\n'
        "3,x,,2.0,,,Ünïcödé ✓,0\n"
    )
    src = write(tmp_path / "in.csv", original)
    csv_adapter.transform(src, tmp_path / "rows.json")
    rows_to_csv.transform(tmp_path / "rows.json", tmp_path / "back.csv")
    assert (tmp_path / "back.csv").read_text(encoding="utf-8") == original


# --- YAML -> JSON -------------------------------------------------------------------------


def test_yaml_to_json_with_dates(tmp_path: pathlib.Path) -> None:
    src = write(
        tmp_path / "in.yaml",
        "name: Zoë\n"
        "released: 2024-03-01\n"
        "updated: 2024-03-01T12:30:00Z\n"
        "tags: [a, b]\n"
        "nested:\n  when: [2020-01-02]\n  count: 3\n  ok: yes-ish\n"
        "2024-05-06: date key\n",
    )
    summary = yaml_adapter.transform(src, tmp_path / "out.json")
    data = read_json(tmp_path / "out.json")
    assert data == {
        "name": "Zoë",
        "released": "2024-03-01",
        "updated": "2024-03-01T12:30:00+00:00",
        "tags": ["a", "b"],
        "nested": {"when": ["2020-01-02"], "count": 3, "ok": "yes-ish"},
        "2024-05-06": "date key",
    }
    assert summary["top_level_type"] == "object"
    assert summary["keys"][:2] == ["name", "released"]
    text = (tmp_path / "out.json").read_text(encoding="utf-8")
    assert text.startswith('{\n  "name": "Zoë"')


def test_yaml_top_level_array_and_empty(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "list.yaml", "- 1\n- two\n")
    assert yaml_adapter.transform(src, tmp_path / "a.json") == {
        "top_level_type": "array",
        "items": 2,
    }
    assert read_json(tmp_path / "a.json") == [1, "two"]
    empty = write(tmp_path / "empty.yaml", "# nothing\n")
    assert yaml_adapter.transform(empty, tmp_path / "e.json") == {"top_level_type": "null"}
    assert read_json(tmp_path / "e.json") is None


def test_yaml_multi_document_rejected(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "in.yaml", "a: 1\n---\nb: 2\n")
    with pytest.raises(ValueError, match="2 YAML documents"):
        yaml_adapter.transform(src, tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()


def test_yaml_duplicate_key_rejected(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "in.yaml", "a: 1\nb: 2\na: 3\n")
    with pytest.raises(ValueError, match=r"line 3: duplicate key 'a' \(first defined on line 1\)"):
        yaml_adapter.transform(src, tmp_path / "out.json")


def test_yaml_merge_keys_still_work(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "in.yaml", "base: &b {x: 1, y: 2}\nchild:\n  <<: *b\n  y: 3\n")
    yaml_adapter.transform(src, tmp_path / "out.json")
    assert read_json(tmp_path / "out.json")["child"] == {"x": 1, "y": 3}


def test_yaml_unsafe_tags_refused(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "in.yaml", "x: !!python/object/apply:os.system ['echo hi']\n")
    with pytest.raises(yaml.constructor.ConstructorError):
        yaml_adapter.transform(src, tmp_path / "out.json")


def test_yaml_nan_refused(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "in.yaml", "x: .nan\n")
    with pytest.raises(ValueError, match="JSON compliant"):
        yaml_adapter.transform(src, tmp_path / "out.json")


# --- Markdown -> HTML ---------------------------------------------------------------------

REPORT_MD = """\
# Quarterly *Revenue* Report

Intro paragraph with **bold** text.

| Region | Revenue |
|--------|--------:|
| North  | 1,200   |
| South  | 980     |

```python
print("<b>not bold</b>")
```

## Details
"""


def test_markdown_renders_complete_document(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "q3-report.md", REPORT_MD)
    summary = md_adapter.transform(src, tmp_path / "out.html")
    out = (tmp_path / "out.html").read_text(encoding="utf-8")
    assert out.startswith("<!DOCTYPE html>\n<html>")
    assert '<meta charset="utf-8">' in out
    assert "<title>Quarterly Revenue Report</title>" in out
    assert "<style>" in out and "</html>" in out.rstrip()[-8:]
    assert "<table>" in out and "<th>Region</th>" in out and "<td>North</td>" in out
    assert '<code class="language-python">' in out
    assert "&lt;b&gt;not bold&lt;/b&gt;" in out
    assert summary["title"] == "Quarterly Revenue Report"
    assert summary["headings"] == 2 and summary["tables"] == 1
    assert summary["bytes"] == len(out.encode("utf-8"))


def test_markdown_has_no_external_references(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "r.md", REPORT_MD)
    md_adapter.transform(src, tmp_path / "out.html")
    out = (tmp_path / "out.html").read_text(encoding="utf-8").lower()
    for needle in ("<link", "<script", "src=", "@import", "http://", "https://"):
        assert needle not in out, needle


def test_markdown_title_falls_back_to_stem(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "weekly-notes.md", "Just text, no heading.\n")
    assert md_adapter.transform(src, tmp_path / "out.html")["title"] == "weekly-notes"
    assert "<title>weekly-notes</title>" in (tmp_path / "out.html").read_text(encoding="utf-8")


def test_markdown_title_is_escaped(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "r.md", "Intro\n\n## Profit & Loss `<x>`\n")
    md_adapter.transform(src, tmp_path / "out.html")
    assert "<title>Profit &amp; Loss &lt;x&gt;</title>" in (tmp_path / "out.html").read_text(
        encoding="utf-8"
    )


def test_markdown_raw_html_and_script_are_neutralised(tmp_path: pathlib.Path) -> None:
    src = write(
        tmp_path / "evil.md",
        "# Hi\n\n"
        "<script>alert('block')</script>\n\n"
        'inline <script>alert("inline")</script> and <img src=x onerror="alert(1)">\n\n'
        '<div onclick="alert(2)">\n\n*md*\n\n</div>\n\n'
        "[click](javascript:alert(3)) [tab](java\tscript:alert(4)) "
        "![img](data:text/html;base64,PHNjcmlwdD4=) [ok](https://example.com/a)\n",
    )
    md_adapter.transform(src, tmp_path / "out.html")
    out = (tmp_path / "out.html").read_text(encoding="utf-8")
    lowered = out.lower()
    assert "<script" not in lowered
    assert "<img src=x" not in lowered and "<div onclick" not in lowered
    assert "javascript:" not in lowered and "data:text/html" not in lowered
    assert "&lt;script&gt;alert('block')&lt;/script&gt;" in out
    assert '<a href="https://example.com/a">ok</a>' in out


def test_markdown_entity_encoded_scheme_is_dropped(tmp_path: pathlib.Path) -> None:
    # Browsers decode character references in attributes, so these are javascript: links.
    src = write(
        tmp_path / "r.md",
        "[a](&#106;avascript:alert(1)) [b](&#x6A;AVASCRIPT:x) [c][ref]\n\n[ref]: javascript:y\n",
    )
    md_adapter.transform(src, tmp_path / "out.html")
    out = (tmp_path / "out.html").read_text(encoding="utf-8")
    assert "href" not in out
    assert "<a>a</a> <a>b</a> <a>c</a>" in out


def test_markdown_title_with_backslash_escapes(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "r.md", "# Cost \\*estimate\\* &amp; more\n")
    assert md_adapter.transform(src, tmp_path / "out.html")["title"] == "Cost *estimate* & more"


def test_markdown_unicode(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "r.md", "# Résumé ✓\n\n東京\n", encoding="utf-8-sig")
    assert md_adapter.transform(src, tmp_path / "out.html")["title"] == "Résumé ✓"
    assert "<p>東京</p>" in (tmp_path / "out.html").read_text(encoding="utf-8")


# --- script entry points ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "source_name", "source_text", "expected"),
    [
        ("table_csv_to_json_rows", "in.csv", "a,b\n1,x\n", {"rows": 1, "columns": ["a", "b"]}),
        ("table_tsv_to_json_rows", "in.tsv", "a\tb\n1\tx\n", {"rows": 1, "columns": ["a", "b"]}),
        (
            "table_json_rows_to_csv",
            "in.json",
            '[{"a": 1, "b": "x"}]',
            {"rows": 1, "columns": ["a", "b"]},
        ),
        ("object_yaml_to_json", "in.yaml", "a: 1\n", {"top_level_type": "object", "keys": ["a"]}),
        ("report_markdown_to_html", "in.md", "# T\n", None),
    ],
)
def test_module_runs_as_script(
    tmp_path: pathlib.Path,
    module: str,
    source_name: str,
    source_text: str,
    expected: dict[str, Any] | None,
) -> None:
    src = write(tmp_path / source_name, source_text)
    dst = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, str(ADAPTERS_DIR / f"{module}.py"), str(src), str(dst)],
        capture_output=True,
        text=True,
        check=False,
        # Run outside the repo so the script cannot lean on project-relative imports.
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    if expected is None:
        assert summary["title"] == "T" and summary["headings"] == 1
    else:
        assert summary == expected
    assert dst.is_file()


def test_script_fails_loudly_on_bad_input(tmp_path: pathlib.Path) -> None:
    src = write(tmp_path / "in.csv", "a,a\n1,2\n")
    result = subprocess.run(
        [sys.executable, str(ADAPTERS_DIR / "table_csv_to_json_rows.py"), str(src), "out.json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode != 0
    assert "duplicates column index 0" in result.stderr
    assert result.stdout == ""
