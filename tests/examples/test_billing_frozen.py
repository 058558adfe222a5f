"""The frozen billing-audit steps find exactly the generator's seeded discrepancies."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from compiler.plan.parse import parse_candidate
from compiler.plan.pipeline import compile_plan
from tests.compiler.conftest import make_ctx

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "billing-audit"
PLAN = EXAMPLE / "frozen-plan.json"
STEPS = [
    "profile_sources",
    "normalize_sources",
    "contract_applicability",
    "find_discrepancies",
    "exception_summary",
    "correction_candidates",
    "render_report",
]
INPUTS = ["time_entries.csv", "rate_cards.csv", "contracts.json"]
# src/href pointing off the page: http:, https: or protocol-relative //.
EXTERNAL_REF = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:|//)""", re.IGNORECASE)


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("billing_generate", EXAMPLE / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def _plan_steps() -> dict[str, dict[str, Any]]:
    return {s["step_key"]: s for s in json.loads(PLAN.read_text())["steps"]}


def _workspace(root: Path, data: Path) -> Path:
    for sub in ("input", "output", "work"):
        (root / sub).mkdir(parents=True)
    for name in INPUTS:
        shutil.copy(data / name, root / "input" / name)
    return root


def _run(step: str, workspace: Path) -> subprocess.CompletedProcess[str]:
    script = EXAMPLE / "steps" / f"{step}.py"
    return subprocess.run(
        [sys.executable, str(script)], cwd=workspace, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("data")
    _generator().generate(out, seed=2)
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, data: Path) -> Path:
    """The seven steps in order; each must write exactly its declared outputs."""
    workspace = _workspace(tmp_path_factory.mktemp("run") / "ws", data)
    plan = _plan_steps()
    for step in STEPS:
        before = set((workspace / "output").iterdir())
        result = _run(step, workspace)
        assert result.returncode == 0, f"{step} failed:\n{result.stderr}"
        written = {p.relative_to(workspace).as_posix() for p in (workspace / "output").iterdir()}
        new = written - {p.relative_to(workspace).as_posix() for p in before}
        assert new == {o["path"] for o in plan[step]["expected_outputs"]}, step
    return workspace


def _money_rows(rows: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    fields = ("entry_id", "kind", "expected_amount", "billed_amount", "delta")
    return {tuple(row[f] for f in fields) for row in rows}


def test_generator_is_deterministic_with_753_entries(tmp_path: Path, data: Path) -> None:
    again = tmp_path / "again"
    summary = _generator().generate(again, seed=2)
    for name in [*INPUTS, "answer_key.json"]:
        assert (again / name).read_bytes() == (data / name).read_bytes(), name
    assert summary["entries"] == 753
    lines = (data / "time_entries.csv").read_text().splitlines()
    assert len(lines) == 1 + 753
    other = tmp_path / "other"
    _generator().generate(other, seed=3)
    assert (other / "time_entries.csv").read_bytes() != (data / "time_entries.csv").read_bytes()


def test_answer_key_seeds_every_kind_several_times(data: Path) -> None:
    key = json.loads((data / "answer_key.json").read_text())
    counts = {k: sum(1 for row in key if row["kind"] == k) for k in {r["kind"] for r in key}}
    assert counts == {
        "rate_mismatch": 9,
        "over_cap": 7,
        "missing_rate": 6,
        "duplicate_entry": 8,
        "non_billable_billed": 6,
        "discount_missing": 7,
    }
    assert len({row["entry_id"] for row in key}) == len(key)  # one kind per seeded entry


def test_every_declared_output_exists(run: Path) -> None:
    for step in _plan_steps().values():
        for output in step["expected_outputs"]:
            assert (run / output["path"]).is_file(), output["path"]


def test_discrepancies_equal_the_answer_key(run: Path, data: Path) -> None:
    found = json.loads((run / "output" / "discrepancies.json").read_text())
    key = json.loads((data / "answer_key.json").read_text())
    assert _money_rows(found) == _money_rows(key)
    assert len(found) == len(key)


def test_summary_and_corrections_agree_with_discrepancies(run: Path) -> None:
    found = json.loads((run / "output" / "discrepancies.json").read_text())
    summary = json.loads((run / "output" / "exception_summary.json").read_text())
    corrections = json.loads((run / "output" / "correction_candidates.json").read_text())
    assert sum(s["count"] for s in summary) == len(found)
    for s in summary:
        mine = [d["delta"] for d in found if d["kind"] == s["kind"]]
        assert s["count"] == len(mine)
        assert s["total_delta"] == pytest.approx(sum(mine), abs=0.005)
    by_entry = {d["entry_id"]: d for d in found}
    assert {c["entry_id"] for c in corrections} == set(by_entry)
    for c in corrections:
        assert c["proposed_value"] == by_entry[c["entry_id"]]["expected_amount"]


def test_applicability_covers_every_entry_once(run: Path) -> None:
    rows = json.loads((run / "output" / "contract_applicability.json").read_text())
    assert len(rows) == len({r["entry_id"] for r in rows}) == 753


def test_report_is_self_contained_with_svg(run: Path) -> None:
    html = (run / "output" / "billing_audit_report.html").read_text()
    assert html.lstrip().lower().startswith("<!doctype html>")
    assert "<svg" in html
    assert not EXTERNAL_REF.search(html)
    assert not re.search(r"<script[^>]*\bsrc\s*=", html, re.IGNORECASE)
    assert not re.search(r"<link[^>]*\bhref\s*=", html, re.IGNORECASE)


def _drop_rate_cards(ws: Path) -> None:
    (ws / "input" / "rate_cards.csv").unlink()


def _bad_hours(ws: Path) -> None:
    path = ws / "input" / "time_entries.csv"
    lines = path.read_text().splitlines()
    cells = lines[5].split(",")
    cells[5] = "seven"  # hours
    lines[5] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")


def _contract_gap(ws: Path) -> None:
    path = ws / "input" / "contracts.json"
    contracts = [c for c in json.loads(path.read_text()) if c["contract_id"] != "K-EMBER-2025"]
    path.write_text(json.dumps(contracts))


def _broken_json(ws: Path) -> None:
    (ws / "input" / "contracts.json").write_text('[{"contract_id": ')


@pytest.mark.parametrize(
    ("corrupt", "failing_step", "message"),
    [
        (_drop_rate_cards, "profile_sources", "missing input input/rate_cards.csv"),
        (_broken_json, "profile_sources", "is not valid JSON"),
        (_bad_hours, "normalize_sources", "hours='seven' is not a number"),
        (_contract_gap, "contract_applicability", "expected exactly one contract of CL-EMBER"),
    ],
)
def test_malformed_input_stops_the_relevant_step(
    tmp_path: Path, data: Path, corrupt: Any, failing_step: str, message: str
) -> None:
    workspace = _workspace(tmp_path / "ws", data)
    corrupt(workspace)
    for step in STEPS[: STEPS.index(failing_step)]:
        assert _run(step, workspace).returncode == 0, step
    result = _run(failing_step, workspace)
    assert result.returncode != 0
    assert message in result.stderr


def test_missing_upstream_output_is_named(tmp_path: Path, data: Path) -> None:
    workspace = _workspace(tmp_path / "ws", data)
    result = _run("find_discrepancies", workspace)
    assert result.returncode != 0
    assert "missing input output/contract_applicability.json" in result.stderr


def _inlined_plan() -> dict[str, Any]:
    """frozen-plan.json with each step's code_file replaced by the file's text as `code`."""
    raw = json.loads(PLAN.read_text())
    for step in raw["steps"]:
        step["code"] = (PLAN.parent / step.pop("code_file")).read_text()
    return raw


def test_frozen_plan_compiles_without_inserted_steps() -> None:
    plan = compile_plan(parse_candidate(_inlined_plan()), ctx=make_ctx())
    assert [s.step_key for s in plan.steps] == STEPS
    assert not any(s.inserted_by_compiler for s in plan.steps)
    for step in plan.steps:
        assert step.domain_pack_ids == ["billing-audit"], step.step_key
        assert step.backend == "sandbox.frozen", step.step_key  # code is frozen, not generated
        assert step.bindings and all(b.rank in (1, 2) for b in step.bindings), step.step_key
        assert not any(b.adapter_id for b in step.bindings), step.step_key
    assert compile_plan(parse_candidate(_inlined_plan()), ctx=make_ctx()) == plan
