"""Step render_report: a self-contained HTML audit report (inline CSS, inline SVG charts)."""

import json
import sys
from collections import defaultdict
from decimal import Decimal
from html import escape
from pathlib import Path

SUMMARY = Path("output/exception_summary.json")
DISCREPANCIES = Path("output/discrepancies.json")
CORRECTIONS = Path("output/correction_candidates.json")
OUTPUT = Path("output/billing_audit_report.html")
TOP = 15
TOP_HEADERS = ["entry", "kind", "client", "date", "expected", "billed", "delta", "notes"]
BAR_COLOURS = {True: "#c0392b", False: "#2e86c1"}  # overcharge red, undercharge blue
COUNT_COLOUR = "#52606d"  # counts carry no direction

CSS = """
body { font-family: -apple-system, Segoe UI, Helvetica, Arial, sans-serif; margin: 2rem auto;
       max-width: 1100px; color: #1f2933; padding: 0 1rem; }
h1 { margin-bottom: .2rem; } h2 { margin-top: 2.2rem; border-bottom: 2px solid #e4e7eb; }
.sub { color: #616e7c; margin-top: 0; }
.kpis { display: flex; gap: 1rem; flex-wrap: wrap; margin: 1.5rem 0; }
.kpi { background: #f5f7fa; border-radius: 8px; padding: .8rem 1.2rem; min-width: 150px; }
.kpi b { display: block; font-size: 1.5rem; } .kpi span { color: #616e7c; font-size: .85rem; }
.charts { display: flex; gap: 2rem; flex-wrap: wrap; }
.chart { flex: 1 1 480px; } svg text { font-size: 12px; fill: #1f2933; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { border-bottom: 1px solid #e4e7eb; padding: .35rem .5rem; text-align: left; }
th { background: #f5f7fa; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.pos { color: #c0392b; } .neg { color: #2e86c1; }
footer { margin-top: 2.5rem; color: #616e7c; font-size: .85rem; }
"""


def fail(message: str) -> None:
    print(f"render_report: {message}", file=sys.stderr)
    sys.exit(2)


def load(path: Path, required: list[str], numbers: list[str]) -> list[dict]:
    if not path.is_file():
        fail(f"missing input {path}")
    try:
        rows = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        fail(f"{path} is not valid JSON: {exc}")
    if not isinstance(rows, list):
        fail(f"{path} must be a JSON array of objects")
    for i, row in enumerate(rows):
        missing = [k for k in required if not isinstance(row, dict) or k not in row]
        if missing:
            fail(f"{path} row {i}: missing {', '.join(missing)}")
        wrong = [
            k for k in numbers if isinstance(row[k], bool) or not isinstance(row[k], int | float)
        ]
        if wrong:
            fail(f"{path} row {i}: {', '.join(wrong)} must be numbers")
    return rows


def usd(value: float | Decimal) -> str:
    return f"{'-' if value < 0 else ''}${abs(value):,.2f}"


def signed(value: float) -> str:
    css = "pos" if value > 0 else "neg" if value < 0 else ""
    return f'<td class="num {css}">{escape(usd(value))}</td>'


def bar_chart(title: str, items: list[tuple[str, float]], money: bool) -> str:
    """A horizontal bar chart as inline SVG; negative values grow left of the zero line."""
    label_w, plot_w, value_w, row_h = 150, 300, 90, 26
    height = 30 + row_h * max(len(items), 1)
    low = min([0.0, *(v for _, v in items)])
    high = max([0.0, *(v for _, v in items)])
    scale = plot_w / ((high - low) or 1)
    zero = label_w + (0 - low) * scale
    parts = [
        f'<svg role="img" aria-label="{escape(title)}" width="{label_w + plot_w + value_w}" '
        f'height="{height}" viewBox="0 0 {label_w + plot_w + value_w} {height}">',
        f'<text x="0" y="16" font-weight="bold">{escape(title)}</text>',
        f'<line x1="{zero:.1f}" y1="24" x2="{zero:.1f}" y2="{height}" stroke="#9aa5b1"/>',
    ]
    for i, (label, value) in enumerate(items):
        y = 28 + i * row_h
        x = min(zero, zero + value * scale)
        text = usd(value) if money else f"{value:g}"
        tip = f"<title>{escape(label)}: {escape(text)}</title>"
        parts += [
            f'<text x="0" y="{y + 15}">{escape(label)}</text>',
            f'<rect x="{x:.1f}" y="{y + 3}" width="{abs(value) * scale:.1f}" height="{row_h - 8}" '
            f'fill="{BAR_COLOURS[value >= 0] if money else COUNT_COLOUR}">{tip}</rect>',
            f'<text x="{label_w + plot_w + 6}" y="{y + 15}">{escape(text)}</text>',
        ]
    parts.append("</svg>")
    return "\n".join(parts)


def table(headers: list[str], rows: list[list[str]], numeric: set[int]) -> str:
    head = "".join(
        f'<th class="num">{escape(h)}</th>' if i in numeric else f"<th>{escape(h)}</th>"
        for i, h in enumerate(headers)
    )
    body = "\n".join(f"<tr>{''.join(cells)}</tr>" for cells in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>"


def cell(value: object) -> str:
    return f"<td>{escape('' if value is None else str(value))}</td>"


def build(summary: list[dict], discrepancies: list[dict], corrections: list[dict]) -> str:
    over = sum(Decimal(str(d["delta"])) for d in discrepancies if d["delta"] > 0)
    under = sum(Decimal(str(d["delta"])) for d in discrepancies if d["delta"] < 0)
    by_client: dict[str, Decimal] = defaultdict(Decimal)
    for d in discrepancies:
        by_client[str(d.get("client_id") or "unknown")] += Decimal(str(d["delta"]))
    kpis = [
        (str(len(discrepancies)), "discrepancies"),
        (usd(over), "overbilled"),
        (usd(under), "underbilled"),
        (usd(over + under), "net overbilled"),
        (str(len(corrections)), "corrections proposed"),
    ]
    charts = [
        bar_chart("Discrepancies by kind", [(s["kind"], s["count"]) for s in summary], False),
        bar_chart("Net delta by kind", [(s["kind"], s["total_delta"]) for s in summary], True),
        bar_chart(
            "Net delta by client", [(c, float(v)) for c, v in sorted(by_client.items())], True
        ),
    ]
    kind_rows = [
        [cell(s["kind"]), f'<td class="num">{s["count"]}</td>', signed(s["total_delta"])]
        for s in summary
    ]
    top = sorted(discrepancies, key=lambda d: (-abs(d["delta"]), d["entry_id"]))[:TOP]
    top_rows = [
        [cell(d["entry_id"]), cell(d["kind"]), cell(d.get("client_id")), cell(d.get("work_date"))]
        + [
            f'<td class="num">{escape(usd(d[k]))}</td>'
            for k in ("expected_amount", "billed_amount")
        ]
        + [signed(d["delta"]), cell(d.get("notes"))]
        for d in top
    ]
    fix_rows = [
        [cell(c["entry_id"]), cell(c["field"])]
        + [f'<td class="num">{escape(usd(c[k]))}</td>' for k in ("current_value", "proposed_value")]
        + [cell(c["reason"])]
        for c in corrections
    ]
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Billing audit report</title>
<style>{CSS}</style>
</head>
<body>
<h1>Billing audit report</h1>
<p class="sub">Time entries checked against rate cards and client contracts.
Positive deltas are overcharges; negative deltas were billed too little.</p>
<div class="kpis">
{"".join(f'<div class="kpi"><b>{escape(v)}</b><span>{escape(k)}</span></div>' for v, k in kpis)}
</div>
<h2>Overview</h2>
<div class="charts">
{"".join(f'<div class="chart">{c}</div>' for c in charts)}
</div>
<h2>Exceptions by kind</h2>
{table(["kind", "count", "total delta"], kind_rows, {1, 2})}
<h2>Top {len(top)} discrepancies by amount</h2>
{table(TOP_HEADERS, top_rows, {4, 5, 6})}
<h2>Proposed corrections ({len(corrections)})</h2>
{table(["entry", "field", "current", "proposed", "reason"], fix_rows, {2, 3})}
<footer>Amounts are computed to the cent with half-even rounding. Generated by the frozen
render_report step from output/exception_summary.json, output/discrepancies.json and
output/correction_candidates.json.</footer>
</body>
</html>
"""


def main() -> None:
    summary = load(SUMMARY, ["kind", "count", "total_delta"], ["count", "total_delta"])
    amounts = ["expected_amount", "billed_amount", "delta"]
    discrepancies = load(DISCREPANCIES, ["entry_id", "kind", *amounts], amounts)
    values = ["current_value", "proposed_value"]
    corrections = load(CORRECTIONS, ["entry_id", "field", "reason", *values], values)
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(build(summary, discrepancies, corrections))
    print(f"render_report: wrote {OUTPUT} ({len(discrepancies)} discrepancies)")


if __name__ == "__main__":
    main()
