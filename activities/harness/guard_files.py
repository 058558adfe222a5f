"""The guard at a step's edges: credentials in the files it reads and in the files it writes.

The execution profile's `validation.phases` say what a finding does: `step_input` for the
step's declared inputs (after the preflight receipt, before the executor), `step_output` for
its declared outputs (after the postflight checks, before anything is stored). `block` fails
the attempt (POLICY_BLOCKED, never retried); `report` lets it go on, its files unchanged, and
records guard.found.v1; `off`, or `stages` that leave out L3, skips the scan. A phase the
profile does not declare blocks, as the planner_candidate phase does.

Only credentials count: the guard's detectors without the personal-data ones, as at every
other boundary (`BOUNDARY_DETECTORS`): an email address in a report is the user's data.

What is scanned, by the file's parse validator (its contract's, else its extension's): JSON as
a document (every string and field name, JSON text inside strings; a finding's place is a
JSON pointer); any other text line by line (`line N`), and in a CSV or TSV file also each cell
under a column named for a secret, judged as that field (`line N, column C`). PDF, ZIP,
Parquet and files with a NUL byte in their first 8 KiB are not scanned. Text is streamed, so
a file of any size is scanned whole. One RE2 pass (`compiler/ladder/prefilter.py`) clears
what cannot hold a credential; only the rest costs the guard's per-string scan.
"""

import csv
import io
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Literal

from activities.sandbox.workspace import WorkspaceViolation, safe_open
from compiler.ladder.contract import GuardConfig, LadderContract
from compiler.ladder.detectors import label
from compiler.ladder.guard import scan_document
from compiler.ladder.pointer import decode
from compiler.ladder.prefilter import CHUNK, JSON_TEXT, may_hold, may_hold_value, secret_field
from compiler.ladder.secrets.mask import BOUNDARY_DETECTORS
from schemas.guard import FileFinding, GuardPhase
from schemas.plan import ArtifactContract
from schemas.profile import ExecutionProfile, PhaseMode

MiB = 1 << 20
MAX_JSON_BYTES = 64 * MiB  # the receipts' parse limit: a larger JSON file is scanned as text
MAX_LINE = MiB  # a longer line is scanned in pieces of this many characters
CHUNK_CHARS = CHUNK  # lines (or CSV cells) judged per RE2 pass, and per guard call
SNIFF_BYTES = 8192
SHOWN_IN_ERROR = 5

Format = Literal["json", "csv", "tsv", "text", "binary"]
Place = tuple[int, str, str, str]  # line, column ('' for a line), detector, mask
# What only a column's name reveals: the rest of a cell's findings are its line's.
_BY_FIELD = frozenset({"secret_field", "aws_secret"})

_SCHEMA: dict[str, Any] = {"type": "object"}
_DOCUMENT = LadderContract(
    json_schema=_SCHEMA, top_level="object", guard=GuardConfig(detectors=BOUNDARY_DETECTORS)
)
# CSV cells under a secret's column: its name is scanned once, in the header line.
_CELLS = LadderContract(
    json_schema=_SCHEMA,
    top_level="object",
    guard=GuardConfig(detectors=BOUNDARY_DETECTORS, scan_keys=False),
)
_BY_VALIDATOR: dict[str, Format] = {
    "json": "json",
    "json_rows": "json",
    "csv": "csv",
    "tsv": "tsv",
    "pdf": "binary",
    "zip": "binary",
    "parquet": "binary",
    "binary": "binary",
}
_BY_SUFFIX: tuple[tuple[str, Format], ...] = (
    (".json", "json"),
    (".csv", "csv"),
    (".tsv", "tsv"),
    (".pdf", "binary"),
    (".zip", "binary"),
    (".parquet", "binary"),
)


def phase_mode(profile: ExecutionProfile, phase: GuardPhase) -> PhaseMode:
    """What a credential found at `phase` does under `profile`."""
    declared = profile.validation.phases.get(phase)
    if declared is None:
        return "block"
    if declared.stages and "L3" not in declared.stages:
        return "off"
    return declared.mode


def scan_files(
    workspace: Path, files: Sequence[tuple[str, ArtifactContract | None]]
) -> list[FileFinding]:
    """The credentials in each workspace file named, in file order, then by place."""
    found: list[FileFinding] = []
    for rel, contract in files:
        try:
            with safe_open(workspace, rel) as (f, size):
                found += _scan(f, size, rel, _format(rel, contract))
        except (FileNotFoundError, WorkspaceViolation):
            continue  # the receipt's checks say what is wrong with such a file
    return found


def blocked_message(step_key: str, phase: GuardPhase, found: Sequence[FileFinding]) -> str:
    """Why the attempt fails, where and what to do, naming each detector, never a value."""
    shown = "; ".join(
        f"{f.file} {_place(f.where)}: {label(f.detector)}" for f in found[:SHOWN_IN_ERROR]
    )
    if len(found) > SHOWN_IN_ERROR:
        shown += f" (and {len(found) - SHOWN_IN_ERROR} more)"
    if phase == "step_output":
        return (
            f"step {step_key} wrote credentials: {shown}. The execution profile's step_output "
            "phase blocks credentials (mode: block), so none of the step's outputs was stored "
            "or published. Keep secrets out of what the step writes (use them through a tool, "
            "never copy them into an output), or run under a profile whose "
            "validation.phases.step_output.mode is report"
        )
    return (
        f"step {step_key} was not run: its inputs hold credentials: {shown}. The execution "
        "profile's step_input phase blocks credentials (mode: block). Remove them from the "
        "input (or from the step that wrote it), or run under a profile whose "
        "validation.phases.step_input.mode is report"
    )


def _place(where: str) -> str:
    if where.startswith("line "):
        return f"at {where}"
    return f"at JSON pointer {where}" if where else "(the whole document)"


def _format(rel: str, contract: ArtifactContract | None) -> Format | None:
    """The file's format; None: text unless its first bytes say it is binary."""
    validator = contract.parse_validator if contract is not None else None
    if validator is not None:
        return _BY_VALIDATOR.get(validator, "text")
    name = rel.lower()
    return next((fmt for suffix, fmt in _BY_SUFFIX if name.endswith(suffix)), None)


def _scan(f: BinaryIO, size: int, rel: str, fmt: Format | None) -> list[FileFinding]:
    if fmt is None:
        fmt = "binary" if b"\0" in f.read(SNIFF_BYTES) else "text"
        f.seek(0)
    if fmt == "binary":
        return []
    if fmt == "json" and size <= MAX_JSON_BYTES:
        try:
            document = json.loads(f.read())
        except ValueError:  # not JSON after all (the receipt says so): its text is scanned
            f.seek(0)
        else:
            if not may_hold_value(document):
                return []
            return [
                FileFinding(file=rel, where=d.path, detector=d.detector, masked=d.masked)
                for d in sorted(scan_document(document, _DOCUMENT))
            ]
    text = io.TextIOWrapper(f, encoding="utf-8", errors="replace", newline="")
    try:
        found = _scan_lines(_lines(text), rel)
        if fmt in ("csv", "tsv"):
            text.seek(0)
            found += _scan_secret_columns(text, "\t" if fmt == "tsv" else ",")
    finally:
        text.detach()  # the file is safe_open's to close
    return [
        FileFinding(
            file=rel,
            where=f"line {line}, column {column}" if column else f"line {line}",
            detector=detector,
            masked=masked,
        )
        for line, column, detector, masked in sorted(found)
    ]


def _lines(text: io.TextIOWrapper) -> Iterator[tuple[int, str]]:
    """(number, text) of every line, without its end; a line over MAX_LINE comes in pieces."""
    number = 1
    while piece := text.readline(MAX_LINE):
        line = piece.rstrip("\r\n")
        yield number, line
        if len(line) < len(piece):
            number += 1


def _scan_lines(lines: Iterable[tuple[int, str]], rel: str) -> list[Place]:
    found: list[Place] = []
    batch: list[tuple[int, str]] = []
    chars = 0
    for number, line in lines:
        batch.append((number, line))
        chars += len(line) + 1
        if chars >= CHUNK_CHARS:
            found += _scan_batch(batch)
            batch, chars = [], 0
    return found + _scan_batch(batch)


def _scan_batch(batch: list[tuple[int, str]]) -> list[Place]:
    """The guard over lines the RE2 pass could not clear (a line of JSON text: always)."""
    if not batch:
        return []
    texts = [line for _, line in batch]
    if not any(JSON_TEXT.match(t) for t in texts) and not may_hold("\n".join(texts)):
        return []
    return [
        (batch[int(decode(d.path)[0])][0], "", d.detector, d.masked)
        for d in scan_document(texts, _DOCUMENT)
    ]


def _scan_secret_columns(text: io.TextIOWrapper, delimiter: str) -> list[Place]:
    """Each cell of a column named for a secret, judged as that field."""
    reader = csv.reader(text, delimiter=delimiter)
    try:
        header = next(reader, None) or []
        columns = [(i, name) for i, name in enumerate(header) if secret_field(name)]
        if not columns:
            return []
        found: list[Place] = []
        values: list[dict[str, str]] = []
        places: list[tuple[int, str]] = []
        chars, start = 0, reader.line_num + 1
        for row in reader:
            for i, name in columns:
                if i < len(row):
                    values.append({name: row[i]})
                    places.append((start, name))
                    chars += len(row[i])
            start = reader.line_num + 1
            if chars >= CHUNK_CHARS:
                found += _scan_cells(values, places)
                values, places, chars = [], [], 0
        return found + _scan_cells(values, places)
    except csv.Error:  # not a table after all (the receipt says so): its lines were scanned
        return []


def _scan_cells(values: list[dict[str, str]], places: list[tuple[int, str]]) -> list[Place]:
    if not values:
        return []
    return [
        (*places[int(decode(d.path)[0])], d.detector, d.masked)
        for d in scan_document(values, _CELLS)
        if d.detector in _BY_FIELD
    ]
