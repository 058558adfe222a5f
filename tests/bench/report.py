"""One benchmark module run alone: print its figures, merge them into bench-results.json."""

import json
from pathlib import Path
from typing import Any

OUT = Path("bench-results.json")


def run_alone(results: list[dict[str, Any]]) -> int:
    """Print each figure against its goal and merge the results into bench-results.json by name."""
    for r in results:
        verdict = {True: "met", False: "NOT met", None: "none set"}[r["meets_goal"]]
        print(f"{r['name']}: {r['figure']}; {r['versus']}; goal {r['goal']}: {verdict}")
    existing: dict[str, Any] = {"results": []}
    if OUT.exists():
        existing = json.loads(OUT.read_text())
    names = {r["name"] for r in results}
    existing["results"] = [r for r in existing.get("results", []) if r["name"] not in names]
    existing["results"] += results
    OUT.write_text(json.dumps(existing, indent=2) + "\n")
    print(f"merged into {OUT}")
    return 0
