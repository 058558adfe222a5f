"""Forge's instruments after real runs on the Temporal dev server, read from an in-memory reader."""

import logging
import random
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from activities import telemetry_metrics
from activities.store.admissions import QuotaExceeded, open_admissions
from activities.store.tenant_settings import SettingsChange, open_tenant_settings
from tests.guard.corpus import CREDENTIALS, generator, secret
from tests.telemetry.readings import Readings
from tests.workflows.engine import engine
from tests.workflows.plans import code_step, plan, write_json
from workers.process import logmask
from workers.telemetry.logs import JsonLineFormatter

OK = write_json("output/a.json")


async def test_a_frozen_code_run_counts_steps_by_outcome_and_observes_durations(
    temporal_env, task_queue, tmp_path, readings: Readings
):
    document = plan(
        code_step("bad", "raise SystemExit('bad input data')", ["output/bad.json"]),
        code_step("good", OK, ["output/a.json"]),
    )
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        result = await eng.run(document)
    assert result.status == "failed" and result.failed_steps == ["bad"]
    assert readings.grew("forge.steps", **{"forge.outcome": "completed"}) == 1
    failed = {"forge.outcome": "failed", "forge.failure_class": "CODE_ERROR"}
    assert readings.grew("forge.steps", **failed) == 1
    assert readings.grew("forge.steps", **{"forge.tenant": "default"}) == 2
    assert readings.grew("forge.step.duration") == 2  # one observation per attempt
    assert readings.grew("forge.sandbox.start.duration") == 2  # each attempt's sandbox
    # The Prometheus endpoint's text shows the same instruments.
    text = readings.process.scrape().decode()
    assert 'forge_steps_total{forge_failure_class="CODE_ERROR"' in text


def test_a_refused_admission_is_counted_by_tenant_and_quota(tmp_path, readings: Readings):
    url = f"sqlite:///{tmp_path / 'forge.db'}"
    with open_tenant_settings(url) as tenants:
        tenants.update("acme", SettingsChange(max_concurrent_runs=0), actor="test")
    with open_admissions(url) as store, pytest.raises(QuotaExceeded):
        store.admit("acme", "run-1", None, datetime.now(UTC))
    refused = {"forge.tenant": "acme", "forge.quota": "concurrent_runs"}
    assert readings.grew("forge.quota.refusals", **refused) == 1
    assert readings.grew("forge.quota.refusals") == 1


@pytest.mark.parametrize("name", CREDENTIALS)
def test_a_planted_secret_never_appears_in_a_metric_or_a_log_line(name, readings: Readings):
    sample = generator(name)(random.Random(name))
    hidden = secret(name, sample)
    # In a label (a tenant as a caller wrote it), in a model name, and in a log message.
    telemetry_metrics.quota_refused(sample, "concurrent_runs")
    telemetry_metrics.model_called("default", sample, 3, 5, 0.25)
    assert readings.grew("forge.quota.refusals") == 1
    assert readings.grew("forge.model.tokens") == 8
    exported = readings.process.scrape().decode()
    assert hidden not in exported
    points = readings.reader.get_metrics_data()
    assert points is not None and hidden not in points.to_json()
    logmask.install()  # as every Forge process does: the record is masked as it is made
    record = logging.getLogger("forge.test").makeRecord(
        "forge.test", logging.WARNING, __file__, 1, "got %s", (sample,), None
    )
    line = JsonLineFormatter().format(record)
    assert hidden not in line and '"level": "WARNING"' in line
    # What the guard masked on its way to the log is counted, by where it was going.
    assert readings.grew("forge.guard.findings", **{"forge.guard.sink": "log"}) >= 1


def test_with_no_provider_installed_recording_does_nothing(monkeypatch, readings: Readings):
    # FORGE_METRICS_PORT unset: nothing masks, nothing reaches an instrument.
    def no_masking(value: str) -> str:
        raise AssertionError(f"masked {value!r} with telemetry off")

    monkeypatch.setattr(telemetry_metrics, "_enabled", False)
    monkeypatch.setattr(telemetry_metrics, "_masked", no_masking)
    telemetry_metrics.step_attempt("default", "completed", None, 1.0)
    telemetry_metrics.quota_refused("acme", "concurrent_runs")
    telemetry_metrics.model_called("default", "m", 1, 1, 0.1)
    assert not telemetry_metrics.enabled()
    assert readings.grew("forge.steps") == 0 and readings.grew("forge.quota.refusals") == 0
    assert readings.grew("forge.model.tokens") == 0


def test_the_docs_catalogue_lists_every_instrument_and_no_other():
    page = (Path(__file__).resolve().parents[2] / "docs" / "observability.md").read_text()
    section = page.split("## Metrics and logs", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `(forge\.[a-z_.]+)` \|", section, re.M)
    assert listed == list(telemetry_metrics.CATALOGUE)
