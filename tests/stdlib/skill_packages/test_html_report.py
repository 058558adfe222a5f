"""The html-report-generator skill package, run in the real sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from schemas.skills import SkillPackage
from tests.stdlib.skill_packages.support import (
    REPORT,
    ok,
    put,
    read_json,
    run,
    schema_errors,
)
from tests.support.sandbox import needs_bwrap

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
