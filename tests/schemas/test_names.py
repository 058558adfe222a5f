"""Temporal names are one table (schemas/names.py) that the worker and the workflow answer to."""

import ast
from pathlib import Path

import pytest
from temporalio import workflow

from compiler.plan.pipeline import COMPILE_ACTIVITIES, COMPILE_PASSES
from schemas import names
from workers.plugin import ForgePlugin, activity_definition_name
from workers.process import worker
from workers.settings import Settings
from workflows.core import WORKFLOW_NAME
from workflows.run import CompiledRunWorkflow

ROOT = Path(__file__).resolve().parents[2]


def test_the_workflow_answers_to_the_tables_names():
    definition = workflow._Definition.must_from_class(CompiledRunWorkflow)
    assert definition.name == WORKFLOW_NAME == names.WORKFLOW
    assert set(definition.signals) == names.SIGNALS
    assert set(definition.updates) == names.UPDATES
    assert set(definition.queries) == names.QUERIES


def scheduled_literals() -> set[str]:
    """Every string literal the workflow code passes as an activity name."""
    found = set()
    for path in (ROOT / "workflows").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("execute_activity", "start_activity")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.add(node.args[0].value)
    return found


def test_every_activity_the_workflow_schedules_is_in_the_table():
    literals = scheduled_literals()
    assert literals, "the scan found no activity names: it is out of date"
    assert literals <= names.ACTIVITIES
    assert {COMPILE_PASSES, *COMPILE_ACTIVITIES} <= names.ACTIVITIES


def test_a_worker_registers_the_tables_activities_and_refuses_a_difference(monkeypatch, tmp_path):
    settings = Settings(home=tmp_path / "home")
    services = worker.Services.from_settings(settings)
    registered = worker.activity_functions(settings, services)
    assert {activity_definition_name(fn) for fn in registered} == names.ACTIVITIES
    # ForgePlugin registers a worker's activities through the table.
    assert ForgePlugin().configure_worker({"activities": registered})["activities"] == registered
    table = names.ACTIVITIES
    monkeypatch.setattr(names, "ACTIVITIES", table - {"step__usage"})
    with pytest.raises(RuntimeError, match=r"not in the table: step__usage\)"):
        ForgePlugin().configure_worker({"activities": registered})
    monkeypatch.setattr(names, "ACTIVITIES", table | {"gone__activity"})
    with pytest.raises(RuntimeError, match=r"missing: gone__activity;"):
        ForgePlugin().configure_worker({"activities": registered})
    # A workflow-only worker (no activities) is not a Forge activity worker: it passes.
    assert ForgePlugin().configure_worker({"activities": []})["activities"] == []
