"""The inline SVG bar chart for render_report.py, with the escaping and number format it shares.

No JavaScript and no external resources: a chart is one <svg> element whose colours are
attributes taken from the theme manifest, so it keeps them when copied out of the page.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def esc(value: object) -> str:
    """Text -> HTML text or attribute value; control characters become U+FFFD."""
    return html.escape(_CONTROL.sub("\ufffd", str(value)), quote=True)


def fmt_number(value: float | int, decimals: int = 2) -> str:
    """A number for people: thousands separators, trailing zeros trimmed."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:,}"
    if value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    if abs(value) >= 1:
        return f"{value:,.{decimals}f}".rstrip("0").rstrip(".")
    return f"{value:.3g}"


def _scale(lo: float, hi: float) -> tuple[float, float, float]:
    """Axis bounds widened to a 'nice' tick step (1, 2, 2.5 or 5 times a power of ten)."""
    if hi == lo:
        hi = lo + 1
    raw = (hi - lo) / 4
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return math.floor(lo / step) * step, math.ceil(hi / step) * step, step


def bar_chart(chart: dict[str, Any], colors: dict[str, str], label: str) -> str:
    labels, values = chart["labels"], [float(v) for v in chart["values"]]
    unit = f" {chart['unit']}" if chart.get("unit") else ""
    width, height, left, right, top, bottom = 640, 320, 64, 16, 24, 72
    plot_w, plot_h = width - left - right, height - top - bottom
    lo, hi, step = _scale(min(0.0, *values), max(0.0, *values))

    def y(v: float) -> float:
        return top + (hi - v) / (hi - lo) * plot_h

    out = [
        f'<svg class="bar-chart" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{esc(label)}" font-family="inherit" font-size="12">'
    ]
    for k in range(round((hi - lo) / step) + 1):
        tick = lo + k * step
        ty = y(tick)
        out.append(
            f'<line x1="{left}" y1="{ty:.1f}" x2="{width - right}" y2="{ty:.1f}" '
            f'stroke="{colors["grid"]}" stroke-width="1"/>'
            f'<text x="{left - 8}" y="{ty + 4:.1f}" text-anchor="end" fill="{colors["axis"]}">'
            f"{esc(fmt_number(round(tick, 10)))}</text>"
        )
    band = plot_w / len(values)
    bar_w = band * 0.64
    rotate = len(values) > 8
    cut = 14 if rotate else 24
    for i, (name, value) in enumerate(zip(labels, values, strict=True)):
        x = left + i * band + (band - bar_w) / 2
        y0, y1 = sorted((y(max(value, 0.0)), y(min(value, 0.0))))
        fill = colors["bar"] if value >= 0 else colors["negative"]
        value_y = y0 - 6 if value >= 0 else y1 + 14
        cx, ly = x + bar_w / 2, top + plot_h + 18
        shown = name if len(name) <= cut else name[: cut - 1] + "\u2026"
        anchor = "end" if rotate else "middle"
        turn = f' transform="rotate(-35 {cx:.1f} {ly:.1f})"' if rotate else ""
        out.append(
            f'<rect x="{x:.1f}" y="{y0:.1f}" width="{bar_w:.1f}" height="{y1 - y0:.1f}" '
            f'fill="{fill}" rx="2"/>'
            f'<text x="{cx:.1f}" y="{value_y:.1f}" text-anchor="middle" fill="{colors["text"]}">'
            f"{esc(fmt_number(value) + unit)}</text>"
            f'<text x="{cx:.1f}" y="{ly:.1f}" text-anchor="{anchor}"{turn} '
            f'fill="{colors["text"]}">{esc(shown)}</text>'
        )
    out.append(
        f'<line x1="{left}" y1="{y(0.0):.1f}" x2="{width - right}" y2="{y(0.0):.1f}" '
        f'stroke="{colors["axis"]}" stroke-width="1.5"/></svg>'
    )
    return "".join(out)
