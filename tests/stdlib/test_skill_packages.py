"""The stdlib skill packages with scripts, loaded by the real loader and run in the real sandbox.

Each script runs the way a step calls it (seed 000 Part VII): `python /skills/<id>/scripts/...`
inside bubblewrap, cwd /workspace, with the package bound read-only at /skills/<id>. Outputs are
compared exactly and validated against the output schema the loader read from the package.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from pypdf import PdfReader

from activities.sandbox.runner import SandboxLimits, SandboxResult, run_sandboxed
from activities.typelib import STDLIB_DIR, load_library, load_skills
from compiler.recipes.skillpack import compose_from_library
from compiler.recipes.skills import transpile_skill
from schemas.skills import SkillPackage

SKILLS_DIR = STDLIB_DIR / "skills"
# Where the sandboxed tests bind skills from: a copy outside the checkout, as the worker stages
# them (skills_materialize.py), since a checkout path must never show inside a sandbox.
STAGED: dict[str, Path] = {}


@pytest.fixture(scope="module", autouse=True)
def staged_skills(tmp_path_factory) -> None:
    root = tmp_path_factory.mktemp("staged-skills")
    for package in SKILLS_DIR.iterdir():
        if package.is_dir():
            STAGED[package.name] = shutil.copytree(package, root / package.name)


REPORT, TABLE, EXTRACT = "html-report-generator", "tabular-toolkit", "document-text-extractor"
# id: (output schema file, scripts a step calls, modules those scripts import)
PACKAGES = {
    REPORT: ("validation.schema.json", ["render_report.py", "validate_report.py"], ["barchart.py"]),
    TABLE: ("profile.schema.json", ["table.py"], ["tableio.py", "tableprofile.py"]),
    EXTRACT: ("extraction.schema.json", ["extract.py"], ["markup.py"]),
}
LIMITS = SandboxLimits(
    cpu_seconds=60,
    memory_mb=1024,
    file_size_mb=64,
    max_processes=32,
    max_open_files=128,
    wall_clock_s=120,
    output_cap_bytes=1 << 20,
)
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (make system-deps)"
)


@pytest.fixture(scope="module")
def skills() -> dict[str, SkillPackage]:
    return load_library(()).skills


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws" / "input").mkdir(parents=True)
    return tmp_path / "ws"


def put(ws: Path, name: str, data: str | bytes) -> str:
    """Write an input file; returns its path as the step sees it (relative to /workspace)."""
    path = ws / "input" / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return f"input/{name}"


def run(ws: Path, skill: str, script: str, *args: str) -> SandboxResult:
    return run_sandboxed(
        ["python", f"/skills/{skill}/scripts/{script}", *args],
        workspace=ws,
        limits=LIMITS,
        skills={skill: STAGED[skill]},
    )


def ok(result: SandboxResult) -> dict[str, Any]:
    assert result.exit_code == 0, result.stderr
    assert result.isolation == "bwrap" and result.violations == []
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def schema_errors(schema: dict[str, Any] | None, document: Any) -> list[str]:
    assert schema is not None
    return [e.message for e in Draft202012Validator(schema).iter_errors(document)]


# --- loading ----------------------------------------------------------------------------------


@pytest.mark.parametrize("skill_id", sorted(PACKAGES))
def test_the_package_loads_through_the_real_loader_with_its_schema(
    skill_id: str, skills: dict[str, SkillPackage]
) -> None:
    schema_file, scripts, modules = PACKAGES[skill_id]
    package = skills[skill_id]
    assert package.output_schema == read_json(SKILLS_DIR / skill_id / schema_file)
    Draft202012Validator.check_schema(package.output_schema)
    code = [f"scripts/{name}" for name in [*scripts, *modules]]
    assert {"SKILL.md", "REFERENCE.md", schema_file, *code} <= set(package.files)
    assert not [f for f in package.files if "__pycache__" in f]
    assert load_skills(SKILLS_DIR)[skill_id] == package
    text = (SKILLS_DIR / skill_id / "SKILL.md").read_text(encoding="utf-8")
    front = yaml.safe_load(text.split("---")[1])
    assert front["metadata"] == {"forge-output-schema": schema_file, "version": "1.0.0"}
    # The SKILL.md bridge accepts it too: a procedure of numbered steps, no directives.
    assert len(transpile_skill(text, skill_id).steps) >= 4
    reference = (SKILLS_DIR / skill_id / "REFERENCE.md").read_text(encoding="utf-8")
    for script in scripts:  # both documents give the path the step calls
        assert f"python /skills/{skill_id}/scripts/{script}" in text
        assert f"python /skills/{skill_id}/scripts/{script}" in reference


def test_the_report_package_declares_its_assets(skills: dict[str, SkillPackage]) -> None:
    files = set(skills[REPORT].files)
    manifest = read_json(SKILLS_DIR / REPORT / "assets" / "theme-manifest.json")
    assert {"standard", "executive-brief", "dashboard"} <= set(manifest["templates"])
    assert {"modern", "executive", "minimal"} <= set(manifest["themes"])
    for entry in [*manifest["templates"].values(), *manifest["themes"].values()]:
        assert f"assets/{entry['file']}" in files
    Draft202012Validator.check_schema(
        read_json(SKILLS_DIR / REPORT / "references" / "content-schema.json")
    )


def test_new_packages_leave_compose_from_library_matches_alone(
    skills: dict[str, SkillPackage],
) -> None:
    spec = compose_from_library("infer the type of every column and count distinct values", skills)
    assert spec is not None and spec.lineage["skills"] == "csv-profile"
    assert (
        compose_from_library("compose a sonnet about autumn leaves for my mother", skills) is None
    )


# --- html-report-generator --------------------------------------------------------------------

CONTENT: dict[str, Any] = {
    "title": "Q3 <script>alert('x')</script> review",
    "subtitle": "Sales & operations",
    "generated_at": "2024-10-01",
    "summary": "Revenue grew 12% while costs held flat.",
    "sections": [
        {
            "heading": "Revenue",
            "paragraphs": ["Up on Q2 <img src=x onerror=alert(1)>."],
            "metrics": [
                {"label": "Revenue", "value": 1250000.5, "unit": "EUR"},
                {"label": "Deals", "value": 42},
            ],
            "chart": {
                "type": "bar",
                "title": "Revenue by region",
                "unit": "kEUR",
                "labels": ["North", "South", "East", "West"],
                "values": [120.5, 80, -15, 200],
            },
        },
        {
            "heading": "Top accounts",
            "bullets": ["Acme renewed", "Globex expanded"],
            "table": {
                "caption": "Largest accounts",
                "columns": ["Account", "Revenue", "Active"],
                "rows": [["Acme", 1200.25, True], ["Globex", 900, False], ["Initech", None, None]],
            },
        },
    ],
}


@needs_bwrap
@pytest.mark.parametrize(
    ("template", "theme"),
    [("standard", "modern"), ("executive-brief", "executive"), ("dashboard", "minimal")],
)
def test_a_report_renders_self_contained_escaped_and_passes_validation(
    ws: Path, skills: dict[str, SkillPackage], template: str, theme: str
) -> None:
    content = put(ws, "content.json", json.dumps(CONTENT))
    rendered = ok(
        run(
            ws,
            REPORT,
            "render_report.py",
            "--content",
            content,
            "--out",
            "output/report.html",
            "--template",
            template,
            "--theme",
            theme,
        )
    )
    assert rendered["template"] == template and rendered["theme"] == theme
    assert (rendered["sections"], rendered["charts"], rendered["tables"]) == (2, 1, 1)
    html = (ws / "output" / "report.html").read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert "<script" not in html.lower() and "<img" not in html and "://" not in html
    assert "<title>Q3 &lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; review</title>" in html
    assert "Up on Q2 &lt;img src=x onerror=alert(1)&gt;." in html
    assert "Sales &amp; operations" in html
    assert html.count("<svg") == 1 and html.count("<rect") == 4
    assert ">-15 kEUR</text>" in html and ">1,250,000.5<" in html
    assert '<td class="num">1,200.25</td>' in html
    assert f"template {template}; theme {theme}" in html
    assert ("At a glance" in html) == (template == "executive-brief")

    checked = run(
        ws,
        REPORT,
        "validate_report.py",
        "output/report.html",
        "--content",
        content,
        "--out",
        "output/report-validation.json",
    )
    summary = ok(checked)
    assert summary == read_json(ws / "output" / "report-validation.json")
    assert summary["ok"] is True and summary["problems"] == []
    assert summary["headings"] == ["Revenue", "Top accounts"]
    assert (summary["charts"], summary["tables"]) == (1, 1)
    assert schema_errors(skills[REPORT].output_schema, summary) == []


@needs_bwrap
def test_a_bad_report_fails_validation_with_every_problem_listed(
    ws: Path, skills: dict[str, SkillPackage]
) -> None:
    content = put(ws, "content.json", json.dumps(CONTENT))
    put(
        ws,
        "bad.html",
        "<!DOCTYPE html>\n<html><head><title>Other</title>"
        '<link rel="stylesheet" href="https://cdn.example.com/x.css"></head>\n'
        '<body onload="go()"><h2>Revenue</h2><p>TODO: lorem ipsum {{ total }}</p>\n'
        "<script>alert(1)</script><svg></svg></body></html>\n",
    )
    result = run(ws, REPORT, "validate_report.py", "input/bad.html", "--content", content)
    assert result.exit_code == 1
    summary = json.loads(result.stdout)
    assert summary["ok"] is False
    found = {(p["check"], p["line"]) for p in summary["problems"]}
    assert {
        ("active_content", 2),
        ("external_url", 2),
        ("script", 3),
        ("placeholder", 3),
        ("script", 4),
        ("title", None),
        ("headings", None),
        ("tables", None),
    } <= found
    messages = " | ".join(p["message"] for p in summary["problems"])
    assert "section 1 heading 'Top accounts' is not an <h2>" in messages
    assert "<title> is 'Other' but the content title is" in messages
    assert "placeholder 'TODO'" in messages and "'{{ total }}'" in messages
    assert "validate_report.py: input/bad.html (line 4): <script> element" in result.stderr
    assert schema_errors(skills[REPORT].output_schema, summary)


@needs_bwrap
def test_invalid_content_is_refused_with_json_paths(ws: Path) -> None:
    bad = json.loads(json.dumps(CONTENT))
    bad["sections"][0]["chart"]["values"] = [1, "n/a", 3]
    bad["sections"][1]["table"]["rows"][0] = ["Acme"]
    bad["sections"].append({"heading": "Empty"})
    content = put(ws, "content.json", json.dumps(bad))
    result = run(ws, REPORT, "render_report.py", "--content", content, "--out", "output/r.html")
    assert result.exit_code == 1 and result.stdout == ""
    assert "$.sections[0].chart.values[1]: 'n/a' is not of type 'number'" in result.stderr
    assert "$.sections[2]: a section needs paragraphs, bullets, a table, metrics or a chart" in (
        result.stderr
    )
    assert "fix these fields" in result.stderr
    assert not (ws / "output" / "r.html").exists()
    # Once the schema is satisfied, the shape checks name the row and the chart.
    bad["sections"][0]["chart"]["values"] = [1, 2, 3]
    bad["sections"].pop()
    put(ws, "content.json", json.dumps(bad))
    result = run(ws, REPORT, "render_report.py", "--content", content, "--out", "output/r.html")
    assert result.exit_code == 1
    assert "$.sections[0].chart: 4 labels but 3 values" in result.stderr
    assert "$.sections[1].table.rows[0]: 1 cells but the table has 3 columns" in result.stderr
    unknown = run(
        ws,
        REPORT,
        "render_report.py",
        "--content",
        content,
        "--out",
        "output/r.html",
        "--theme",
        "neon",
    )
    assert unknown.exit_code == 1
    assert "unknown theme 'neon'; choose one of executive, minimal, modern" in unknown.stderr


# --- tabular-toolkit --------------------------------------------------------------------------

SALES = (
    "id,region,amount,sold_on,code,note\n"
    "1,north,10.5,2024-01-05,007,\n"
    '2,south,20,2024-02-10,008,"late, paid"\n'
    "3,north,,2024-01-01,009,ok\n"
    "4,east,5,2023-12-31,010,ok\n"
)
REGIONS = "region\tmanager\tamount\nnorth\tAnn\t1\nsouth\tBob\t2\nwest\tCy\t3\n"


@needs_bwrap
def test_profile_infers_types_counts_and_ranges(ws: Path, skills: dict[str, SkillPackage]) -> None:
    sales = put(ws, "sales.csv", SALES)
    summary = ok(run(ws, TABLE, "table.py", "profile", sales, "--out", "output/profile.json"))
    assert summary == {
        "command": "profile",
        "input": sales,
        "out": "output/profile.json",
        "rows": 4,
        "columns": 6,
    }
    profile = read_json(ws / "output" / "profile.json")
    assert profile == {
        "source": "input/sales.csv",
        "format": "csv",
        "rows": 4,
        "columns": [
            {"name": "id", "type": "integer", "nulls": 0, "distinct": 4, "min": 1, "max": 4},
            {"name": "region", "type": "string", "nulls": 0, "distinct": 3},
            {"name": "amount", "type": "number", "nulls": 1, "distinct": 3, "min": 5, "max": 20},
            {
                "name": "sold_on",
                "type": "date",
                "nulls": 0,
                "distinct": 4,
                "min": "2023-12-31",
                "max": "2024-02-10",
            },
            {"name": "code", "type": "string", "nulls": 0, "distinct": 4},
            {"name": "note", "type": "string", "nulls": 1, "distinct": 2},
        ],
    }
    assert schema_errors(skills[TABLE].output_schema, profile) == []


@needs_bwrap
def test_filter_join_aggregate_and_convert_give_exact_outputs(ws: Path) -> None:
    sales, regions = put(ws, "sales.csv", SALES), put(ws, "regions.tsv", REGIONS)
    filtered = ok(
        run(
            ws,
            TABLE,
            "table.py",
            "filter",
            sales,
            "--where",
            "amount >= 10",
            "--where",
            "region != east",
            "--out",
            "output/big.csv",
        )
    )
    assert (filtered["rows_in"], filtered["rows_out"]) == (4, 2)
    assert (ws / "output" / "big.csv").read_text() == (
        "id,region,amount,sold_on,code,note\n"
        "1,north,10.5,2024-01-05,007,\n"
        '2,south,20,2024-02-10,008,"late, paid"\n'
    )
    dated = ok(
        run(
            ws,
            TABLE,
            "table.py",
            "filter",
            sales,
            "--where",
            "sold_on < 2024-01-02",
            "--where",
            "note contains o",
            "--out",
            "output/early.jsonl",
        )
    )
    assert dated["rows_out"] == 2
    assert (ws / "output" / "early.jsonl").read_text() == (
        '{"id": 3, "region": "north", "amount": null, "sold_on": "2024-01-01", '
        '"code": "009", "note": "ok"}\n'
        '{"id": 4, "region": "east", "amount": 5, "sold_on": "2023-12-31", '
        '"code": "010", "note": "ok"}\n'
    )

    joined = ok(
        run(
            ws,
            TABLE,
            "table.py",
            "join",
            "--left",
            sales,
            "--right",
            regions,
            "--on",
            "region",
            "--how",
            "left",
            "--out",
            "output/joined.csv",
        )
    )
    assert joined["columns"][-2:] == ["manager", "amount_right"] and joined["rows_out"] == 4
    assert (ws / "output" / "joined.csv").read_text() == (
        "id,region,amount,sold_on,code,note,manager,amount_right\n"
        "1,north,10.5,2024-01-05,007,,Ann,1\n"
        '2,south,20,2024-02-10,008,"late, paid",Bob,2\n'
        "3,north,,2024-01-01,009,ok,Ann,1\n"
        "4,east,5,2023-12-31,010,ok,,\n"
    )
    inner = ok(
        run(
            ws,
            TABLE,
            "table.py",
            "join",
            "--left",
            sales,
            "--right",
            regions,
            "--on",
            "region",
            "--out",
            "output/inner.json",
        )
    )
    assert inner["rows_out"] == 3
    assert [r["id"] for r in read_json(ws / "output" / "inner.json")] == [1, 2, 3]

    ok(
        run(
            ws,
            TABLE,
            "table.py",
            "aggregate",
            sales,
            "--group-by",
            "region",
            "--agg",
            "count:*",
            "sum:amount",
            "mean:amount",
            "max:sold_on",
            "distinct:note",
            "--out",
            "output/agg.csv",
        )
    )
    assert (ws / "output" / "agg.csv").read_text() == (
        "region,count,sum_amount,mean_amount,max_sold_on,distinct_note\n"
        "east,1,5,5.0,2023-12-31,1\n"
        "north,2,10.5,10.5,2024-01-05,1\n"
        "south,1,20,20.0,2024-02-10,1\n"
    )

    ok(run(ws, TABLE, "table.py", "convert", sales, "--out", "output/sales.json"))
    rows = read_json(ws / "output" / "sales.json")
    assert rows[0] == {
        "id": 1,
        "region": "north",
        "amount": 10.5,
        "sold_on": "2024-01-05",
        "code": "007",
        "note": None,
    }
    ok(run(ws, TABLE, "table.py", "convert", "output/sales.json", "--out", "output/back.csv"))
    assert (ws / "output" / "back.csv").read_text() == SALES
    ok(run(ws, TABLE, "table.py", "convert", regions, "--to", "jsonl", "--out", "work/r.txt"))
    assert (ws / "work" / "r.txt").read_text().splitlines()[0] == (
        '{"region": "north", "manager": "Ann", "amount": 1}'
    )


@needs_bwrap
def test_table_errors_name_the_file_row_and_column(ws: Path) -> None:
    sales = put(ws, "sales.csv", SALES)
    result = run(ws, TABLE, "table.py", "filter", sales, "--where", "note > 3", "--out", "o.csv")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith(
        "table.py filter: error: input/sales.csv, row 2 (line 3), column 'note': 'late, paid' "
        "is not a number, but --where 'note > 3' compares it as one"
    )
    ragged = put(ws, "ragged.csv", "a,b\n1,2\n3\n")
    result = run(ws, TABLE, "table.py", "profile", ragged)
    assert result.exit_code == 1
    assert "input/ragged.csv, row 2 (line 3): 1 fields but the header has 2 columns" in (
        result.stderr
    )
    result = run(ws, TABLE, "table.py", "aggregate", sales, "--agg", "sum:region", "--out", "o.csv")
    assert result.exit_code == 1
    assert "input/sales.csv, row 1 (line 2), column 'region': 'north' is not a number" in (
        result.stderr
    )
    result = run(ws, TABLE, "table.py", "filter", sales, "--where", "price > 3", "--out", "o.csv")
    assert "no column 'price'" in result.stderr and "'amount'" in result.stderr


# --- document-text-extractor ------------------------------------------------------------------


def pdf_with_pages(texts: list[str]) -> bytes:
    """A minimal PDF: one Helvetica text line per page, with a correct xref table."""
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(texts)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(texts)} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, text in enumerate(texts):
        stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info << /Title (Supply terms) >> >>\n" % (
        len(objects) + 1
    )
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
DOCUMENT_XML = (
    f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document {W}><w:body>'
    "<w:p><w:r><w:t>Between Acme and Globex.</w:t></w:r></w:p>"
    '<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Scope</w:t></w:r></w:p>'
    '<w:p><w:r><w:t xml:space="preserve">The supplier </w:t></w:r><w:r><w:t>delivers.</w:t></w:r>'
    "<w:r><w:delText>never</w:delText></w:r></w:p>"
    "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Item</w:t></w:r></w:p></w:tc>"
    "<w:tc><w:p><w:r><w:t>Price</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
    '<w:p><w:pPr><w:pStyle w:val="Terms2"/></w:pPr><w:r><w:t>Payment</w:t></w:r></w:p>'
    "<w:p><w:r><w:t>Net 30.</w:t><w:tab/><w:t>No discount.</w:t></w:r></w:p>"
    "</w:body></w:document>"
)
STYLES_XML = (
    f'<w:styles {W}><w:style w:type="paragraph" w:styleId="Terms2">'
    '<w:name w:val="heading 2"/></w:style></w:styles>'
)
CORE_XML = (
    '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/'
    'core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Supply deal'
    "</dc:title><dc:creator>Ann Lee</dc:creator></cp:coreProperties>"
)


def docx(parts: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@needs_bwrap
def test_pdf_pages_are_extracted_with_metadata(ws: Path, skills: dict[str, SkillPackage]) -> None:
    data = pdf_with_pages(["Hello page one", "Second page (2) text"])
    # The fixture is a real PDF: pypdf reads the text back on the host too.
    assert [p.extract_text() for p in PdfReader(io.BytesIO(data)).pages] == [
        "Hello page one",
        "Second page (2) text",
    ]
    pdf = put(ws, "terms.pdf", data)
    summary = ok(run(ws, EXTRACT, "extract.py", pdf, "--out", "output/terms.json"))
    assert summary["format"] == "pdf" and summary["pages"] == 2
    result = read_json(ws / "output" / "terms.json")
    assert result["pages"] == [
        {"index": 1, "text": "Hello page one"},
        {"index": 2, "text": "Second page (2) text"},
    ]
    assert result["metadata"] == {"page_count": 2, "title": "Supply terms"}
    assert (result["char_count"], result["word_count"]) == (34, 7)
    assert result["sha256"] == hashlib.sha256(data).hexdigest()
    assert result["source"] == "input/terms.pdf" and result["size_bytes"] == len(data)
    assert schema_errors(skills[EXTRACT].output_schema, result) == []


@needs_bwrap
def test_docx_and_html_give_sections_by_heading(ws: Path, skills: dict[str, SkillPackage]) -> None:
    parts = {
        "word/document.xml": DOCUMENT_XML,
        "word/styles.xml": STYLES_XML,
        "docProps/core.xml": CORE_XML,
    }
    word = put(ws, "deal.docx", docx(parts))
    ok(run(ws, EXTRACT, "extract.py", word, "--out", "output/deal.json"))
    result = read_json(ws / "output" / "deal.json")
    assert result["format"] == "docx"
    assert result["metadata"] == {"title": "Supply deal", "author": "Ann Lee"}
    assert result["sections"] == [
        {"index": 1, "heading": None, "level": None, "text": "Between Acme and Globex."},
        {"index": 2, "heading": "Scope", "level": 1, "text": "The supplier delivers.\nItem\tPrice"},
        {"index": 3, "heading": "Payment", "level": 2, "text": "Net 30.\tNo discount."},
    ]
    assert schema_errors(skills[EXTRACT].output_schema, result) == []

    page = put(
        ws,
        "page.htm",
        "<!DOCTYPE html><html lang=en><head><title>Release notes</title>"
        "<style>h1 {color: red}</style><script>document.write('<h1>no</h1>')</script></head>"
        "<body><p>Lead &amp; summary</p><h1>Fixes</h1><p>Faster <b>sync</b>\n  now.</p>"
        "<ul><li>one</li><li>two</li></ul><h2>Known issues</h2>"
        "<table><tr><td>a</td><td>b</td></tr></table></body></html>",
    )
    ok(run(ws, EXTRACT, "extract.py", page, "--out", "output/page.json"))
    result = read_json(ws / "output" / "page.json")
    assert result["format"] == "html"
    assert result["metadata"] == {"lang": "en", "title": "Release notes"}
    assert result["sections"] == [
        {"index": 1, "heading": None, "level": None, "text": "Lead & summary"},
        {"index": 2, "heading": "Fixes", "level": 1, "text": "Faster sync now.\none\ntwo"},
        {"index": 3, "heading": "Known issues", "level": 2, "text": "a\tb"},
    ]
    assert (result["char_count"], result["word_count"]) == (58, 13)
    assert schema_errors(skills[EXTRACT].output_schema, result) == []


@needs_bwrap
def test_a_docx_with_a_doctype_or_a_zip_bomb_is_refused(ws: Path) -> None:
    entity = DOCUMENT_XML.replace(
        "?>\n", '?>\n<!DOCTYPE w:document [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n'
    )
    bad = put(ws, "xxe.docx", docx({"word/document.xml": entity}))
    result = run(ws, EXTRACT, "extract.py", bad, "--out", "output/xxe.json")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith(
        "extract.py: error: input/xxe.docx: word/document.xml declares a DTD or entities"
    )
    assert not (ws / "output" / "xxe.json").exists()

    bomb = put(
        ws, "bomb.docx", docx({"word/document.xml": DOCUMENT_XML, "pad.bin": b"\0" * 4_000_000})
    )
    result = run(ws, EXTRACT, "extract.py", bomb, "--out", "output/b.json")
    assert result.exit_code == 1
    assert "member pad.bin is compressed 4,000,000 to" in result.stderr
    assert "(over 200:1), the mark of a zip bomb" in result.stderr
    result = run(
        ws,
        EXTRACT,
        "extract.py",
        bomb,
        "--out",
        "output/b.json",
        "--max-uncompressed-bytes",
        "1000000",
    )
    assert re.search(
        r"would expand to 4,00\d,\d{3} bytes, over the 1,000,000-byte limit", result.stderr
    )
    big = put(ws, "big.txt", "x" * 2048)
    result = run(ws, EXTRACT, "extract.py", big, "--out", "output/big.json", "--max-bytes", "1024")
    assert "input/big.txt is 2,048 bytes, over the 1,024-byte limit" in result.stderr


# --- the sandbox binding ----------------------------------------------------------------------


@needs_bwrap
def test_the_skill_directory_is_read_only_in_the_sandbox(ws: Path) -> None:
    sales = put(ws, "sales.csv", SALES)
    result = run(
        ws, TABLE, "table.py", "convert", sales, "--out", f"/skills/{TABLE}/scripts/planted.csv"
    )
    assert result.exit_code == 1
    assert f"cannot write /skills/{TABLE}/scripts/planted.csv: Read-only file system" in (
        result.stderr
    )
    (ws / "meta").mkdir(exist_ok=True)
    (ws / "meta" / "step.py").write_text(
        "import os\n"
        f"print(sorted(os.listdir('/skills/{TABLE}/scripts')))\n"
        f"targets = [('/skills/{TABLE}/new.txt', 'w'), ('/skills/{TABLE}/SKILL.md', 'a')]\n"
        "for path, mode in targets:\n"
        "    try:\n"
        "        open(path, mode).write('x')\n"
        "        print('WROTE', path)\n"
        "    except OSError as exc:\n"
        "        print('refused', exc.errno)\n"
    )
    probe = run_sandboxed(
        ["python", "/workspace/meta/step.py"],
        workspace=ws,
        limits=LIMITS,
        skills={TABLE: STAGED[TABLE]},
    )
    assert probe.exit_code == 0, probe.stderr
    listing, created, appended = probe.stdout.splitlines()
    assert listing == "['table.py', 'tableio.py', 'tableprofile.py']"
    # A new file: EROFS. An existing root-owned file: EACCES comes first for the sandbox uid.
    assert created == "refused 30" and appended in ("refused 13", "refused 30")
    assert not (STAGED[TABLE] / "new.txt").exists()
    assert not (STAGED[TABLE] / "scripts" / "planted.csv").exists()
