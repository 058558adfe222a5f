#!/usr/bin/env python3
"""Tidy a CSV export: normalise headers, trim cells, drop blank and exact-duplicate rows.

Usage: clean.py INPUT.csv [OUTPUT.csv]   (default output: INPUT.clean.csv)
"""

import csv
import re
import sys
from pathlib import Path


def normalise_header(name: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", name.strip().lower()).strip("_")


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    src = Path(argv[1])
    dst = Path(argv[2]) if len(argv) == 3 else src.with_suffix(".clean.csv")
    with src.open(newline="", encoding="utf-8-sig") as f:
        sample = f.read(64 * 1024)
        f.seek(0)
        try:
            dialect = csv.Sniffer().sniff(sample)
        except csv.Error:
            dialect = csv.excel
        rows = list(csv.reader(f, dialect))
    if not rows:
        print(f"{src}: empty file", file=sys.stderr)
        return 1
    header = [normalise_header(h) for h in rows[0]]
    clashes = sorted({h for h in header if header.count(h) > 1})
    if clashes:
        print(f"{src}: headers collide after normalising: {', '.join(clashes)}", file=sys.stderr)
        return 1
    seen: set[tuple[str, ...]] = set()
    kept, blank, dupes = [], 0, 0
    for row in rows[1:]:
        cells = tuple(c.strip() for c in row)
        if not any(cells):
            blank += 1
        elif cells in seen:
            dupes += 1
        else:
            seen.add(cells)
            kept.append(cells)
    with dst.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(kept)
    print(
        f"read {len(rows) - 1} rows; dropped {blank} blank and {dupes} duplicate; "
        f"wrote {len(kept)} to {dst}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
