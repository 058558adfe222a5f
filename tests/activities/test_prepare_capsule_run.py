"""One prepare_capsule_run for the CLI, the API and scheduled runs (issue 32 §4)."""

import inspect
from pathlib import Path
from typing import Any

import pytest

import activities.schedules.prepare
import workers.api.capsules
import workers.cli.capsule_run
import workers.services.capsule_runs
from activities.capsules.prepare_run import InputPolicy, prepare_capsule_run
from schemas.scope import Scope


class _Untouchable:
    """A store that fails the test if anything is asked of it."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the store was used ({name}) before the policy was checked")


def test_every_caller_uses_the_one_function() -> None:
    for module in (workers.api.capsules, activities.schedules.prepare):
        assert module.prepare_capsule_run is prepare_capsule_run, module.__name__
    # The CLI imports it inside its verb, so that `forge` starts without the stores (issue 34 §1).
    cli_source = inspect.getsource(workers.cli.capsule_run)
    assert "from activities.capsules.prepare_run import prepare_capsule_run" in cli_source
    assert not hasattr(workers.services.capsule_runs, "prepare_capsule_run")


def test_another_tenants_input_policy_is_refused_before_anything_is_read() -> None:
    policy = InputPolicy((Path("/srv/acme-inputs"),), tenant="acme")
    with pytest.raises(ValueError, match="input policy of tenant 'acme' for a run of tenant"):
        prepare_capsule_run(
            _Untouchable(),  # type: ignore[arg-type]
            _Untouchable(),  # type: ignore[arg-type]
            policy,
            Scope.of_tenant("globex"),
            "billing",
            run_id="run-1",
            inputs={},
            params={},
        )


def test_a_column_named_like_a_credential_matches_its_masked_receipt(tmp_path: Path) -> None:
    """The source run's receipt stored the column's name masked; a new input's is masked too."""
    from activities.capsules.prepare_run import ParameterInvalid, check_input
    from activities.harness.receipts import schema_summary
    from activities.harness.receipts_masking import masked_summary
    from schemas.capsule import InputColumn, InputParameter

    key_id = "AKIA" + "QX7ZK2M4PW9RT3VB"  # a realistic id, split so this file holds none
    source = tmp_path / "source.csv"
    source.write_text(f"account,{key_id}\nacme,1\n")
    [account, masked] = masked_summary(schema_summary(source, "csv"))["columns"]
    assert masked["name"] == "[REDACTED:aws_key]"
    param = InputParameter(
        name="keys",
        path="input/keys.csv",
        validator="csv",
        columns=[InputColumn(name=c["name"], type=c["type"]) for c in (account, masked)],
    )
    again = tmp_path / "again.csv"
    again.write_text(f"account,{key_id}\nglobex,2\n")
    check_input(param, str(again), again)  # the same header: accepted
    other = tmp_path / "other.csv"
    other.write_text("account,region\nglobex,eu\n")
    with pytest.raises(ParameterInvalid, match=r"missing column\(s\) \[REDACTED:aws_key\]"):
        check_input(param, str(other), other)
