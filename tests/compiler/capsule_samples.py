"""Two-version capsule fixtures built by hand: fake blob refs, programs kept in a dict."""

import hashlib
from datetime import UTC, datetime
from typing import Any

from compiler.capsule.seal import capsule_hash
from schemas.artifacts import ArtifactRef
from schemas.capsule import (
    CapsuleContent,
    CapsuleProvenance,
    CapsuleVersion,
    CodeCell,
    InputColumn,
    InputParameter,
    ScalarParameter,
    StepProgram,
)

CODE: dict[str, str] = {}
LOAD = "import csv\nrows = list(csv.DictReader(open('input/time_entries.csv')))\n"
CHECK_1 = "total = sum(float(r['hours']) for r in rows)\nprint(total)\n"
CHECK_2 = "over = [r for r in rows if float(r['hours']) > 8]\nwrite('output/over.json', over)\n"


def blob(text: str) -> ArtifactRef:
    sha = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    CODE[sha] = text
    return ArtifactRef(artifact_id=sha, path=f"code/{sha[7:19]}.py", sha256=sha, size_bytes=1)


def program(key: str, *texts: str, **fields: Any) -> StepProgram:
    cells = [CodeCell(turn=i, code=blob(t), verified=True) for i, t in enumerate(texts, 1)]
    return StepProgram(
        step_key=key,
        contract_hash=fields.pop("contract_hash", contract(key)),
        backend=fields.pop("backend", "python"),
        source=fields.pop("source", "session"),
        cells=cells,
        **fields,
    )


def contract(key: str, salt: str = "") -> str:
    return "sha256:" + hashlib.sha256(f"{key}{salt}".encode()).hexdigest()


def content(**overrides: Any) -> CapsuleContent:
    programs = overrides.pop("programs", [program("load", LOAD), program("check", CHECK_1)])
    fields: dict[str, Any] = {
        "goal_template": "audit the time entries",
        "parameter_schema": {
            "type": "object",
            "properties": {
                "time_entries": {"type": "string", "format": "path"},
                "threshold": {"type": "number", "default": 0.5},
            },
            "required": ["time_entries"],
        },
        "parameter_bindings": {"threshold": 0.5},
        "inputs": [
            InputParameter(
                name="time_entries",
                path="input/time_entries.csv",
                validator="csv",
                columns=[
                    InputColumn(name="date", type="string"),
                    InputColumn(name="hours", type="number"),
                ],
                row_shape="rows",
            )
        ],
        "scalars": [
            ScalarParameter(name="threshold", type="number", default=0.5, read_by=["check"])
        ],
        "plan_template": blob('{"plan": 1}'),
        "plan_hash": "sha256:" + "a" * 64,
        "contracts": {p.step_key: p.contract_hash for p in programs},
        "programs": programs,
        "governance": {"egress": {"allow": ["api.example.com"]}, "budgets": {"usd": 5}},
        "isolation_policy": {"network": "none", "memory_mb": 512},
        "provenance": CapsuleProvenance(
            source_run_id="run-1",
            plan_hash="sha256:" + "a" * 64,
            profile_snapshot_hash="sha256:" + "b" * 64,
            library_snapshot_hash="sha256:" + "c" * 64,
        ),
    }
    fields.update(overrides)
    return CapsuleContent(**fields)


def version(body: CapsuleContent, number: int, name: str = "audit") -> CapsuleVersion:
    return CapsuleVersion(
        tenant_id="default",
        name=name,
        version=number,
        capsule_hash=capsule_hash(body),
        content=body,
        created_at=datetime(2026, 11, 26, tzinfo=UTC),
        created_by="tester",
    )
