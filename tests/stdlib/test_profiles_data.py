"""Tests for the built-in execution profiles shipped as data under stdlib/profiles."""

from __future__ import annotations

import pathlib
from typing import Literal, get_args

import pytest
import yaml

from schemas.profile import ExecutionProfile

PROFILES_DIR = pathlib.Path(__file__).resolve().parents[2] / "stdlib" / "profiles"
Phase = Literal["planner_candidate", "compiled_plan", "step_input", "step_output", "final_output"]
PHASES: tuple[Phase, ...] = get_args(Phase)
FULL_LADDER = ["L3", "L0", "L0b", "L0c", "L0d", "L0e", "L1", "L2", "L4", "L5", "L6"]
BUILTINS = ("default", "strict-compliance", "fast-prototyping")


def load(profile_id: str) -> ExecutionProfile:
    path = PROFILES_DIR / f"{profile_id}.yaml"
    return ExecutionProfile.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def test_exactly_the_builtin_profiles_ship() -> None:
    assert sorted(p.stem for p in PROFILES_DIR.glob("*.yaml")) == sorted(BUILTINS)


@pytest.mark.parametrize("profile_id", BUILTINS)
def test_profile_validates_and_is_named_by_its_file(profile_id: str) -> None:
    profile = load(profile_id)
    assert profile.profile_id == profile_id
    assert profile.version == 1
    assert set(profile.planner_phase_bindings) == {"pass_a", "pass_b", "pass_d", "repair"}
    assert set(profile.executor_by_backend) == {"sandbox.session", "tool_loop", "evaluator"}
    assert set(profile.validation.phases) == set(PHASES)
    assert profile.budgets.max_steps == 200
    assert profile.budgets.history_event_threshold == 10_000
    assert profile.sandbox.isolation == "bwrap"
    assert profile.sandbox.output_cap_bytes == 1024 * 1024
    assert profile.sandbox.max_open_files == 256
    bindings = [*profile.planner_phase_bindings.values(), *profile.executor_by_backend.values()]
    for binding in bindings:
        provider, _, model = binding.model_binding_ref.partition(":")
        assert provider in {"anthropic", "scripted"} and model, binding.model_binding_ref


def test_default_profile() -> None:
    profile = load("default")
    modes = {name: phase.mode for name, phase in profile.validation.phases.items()}
    assert modes == {
        "planner_candidate": "report",
        "compiled_plan": "block",
        "step_input": "block",
        "step_output": "block",
        "final_output": "report",
    }
    matchers = profile.validation.phases["step_output"].matchers
    assert [m.artifact_path for m in matchers] == ["*.json", "*.html"]
    pass_a = profile.planner_phase_bindings["pass_a"]
    assert pass_a.model_binding_ref == "anthropic:claude-opus-4-6"
    assert pass_a.runtime_overrides.use_extended_thinking is True
    for key in ("pass_b", "pass_d"):
        assert profile.planner_phase_bindings[key].model_binding_ref == (
            "anthropic:claude-sonnet-4-6"
        )
    assert profile.budgets.max_parallel_steps == 4
    assert profile.budgets.tool_budget_per_step == 10
    assert profile.budgets.bridge_calls_per_step == 200
    assert profile.budgets.step_timeout_s == 900
    assert profile.default_policy_profile_id is None
    assert profile.egress.allow == []
    assert profile.hitl.require_approval_for_side_effects is False


def test_strict_compliance_profile() -> None:
    profile = load("strict-compliance")
    for name in PHASES:
        phase = profile.validation.phases[name]
        assert phase.mode == "block", name
        assert phase.stages == FULL_LADDER, name
    default = load("default")
    assert profile.budgets.max_parallel_steps == 2
    assert profile.budgets.max_parallel_steps < default.budgets.max_parallel_steps
    assert profile.budgets.max_cost_usd_per_run is not None
    assert profile.hitl.require_approval_for_side_effects is True
    assert profile.hitl.default_approver_role == "compliance-officer"
    assert profile.default_policy_profile_id == "strict.fail-closed.v1"
    assert profile.egress.allow == []


def test_fast_prototyping_profile() -> None:
    profile = load("fast-prototyping")
    for name in PHASES:
        phase = profile.validation.phases[name]
        assert phase.mode == "report", name
        assert phase.stages == ["L3", "L0"], name
    assert profile.budgets.max_parallel_steps == 8
    bindings = [*profile.planner_phase_bindings.values(), *profile.executor_by_backend.values()]
    for binding in bindings:
        assert binding.model_binding_ref == "anthropic:claude-sonnet-4-6"
        assert not binding.runtime_overrides.use_extended_thinking
        assert binding.runtime_overrides.thinking_budget_tokens is None
    assert profile.default_policy_profile_id == "generic.inference-allowed.v1"
    [rule] = profile.egress.allow
    assert rule.domain == "api.github.com"
    assert rule.include_subdomains is False
    assert rule.methods == ["GET"]
