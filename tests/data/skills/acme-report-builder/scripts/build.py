"""Render findings JSON into the Acme HTML report (test fixture package)."""

import html
import json
import sys
from pathlib import Path

findings = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
css = (Path(__file__).parent.parent / "assets" / "acme.css").read_text(encoding="utf-8")
title = html.escape(findings.get("title", "Status report"))
Path(sys.argv[2]).write_text(
    f"<!doctype html><html><head><title>{title}</title><style>{css}</style></head>"
    f"<body><h1>{title}</h1></body></html>\n",
    encoding="utf-8",
)
