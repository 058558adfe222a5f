"""Small plans with frozen code for run-engine tests."""

from typing import Any


def code_step(
    key: str,
    code: str,
    outputs: list[str],
    *,
    depends_on: list[str] | None = None,
    reads: list[str] | None = None,
    policy: str = "strict.fail-closed.v1",
) -> dict[str, Any]:
    return {
        "step_key": key,
        "label": f"Step {key}",
        "objective": f"Compute {key}.",
        "depends_on": depends_on or [],
        "input_file_paths": reads or [],
        "expected_outputs": [{"path": p} for p in outputs],
        "code": code,
        "domain_pack_ids": [],
        "workflow_pack_ids": [],
        "policy_profile_id": policy,
    }


def write_json(path: str, value: str = '{"ok": true}') -> str:
    return f"open({path!r}, 'w').write({value!r})\n"


def plan(*steps: dict[str, Any], run_inputs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"mission": "test", "run_inputs": run_inputs or [], "steps": list(steps)}


def chain(n: int, *, fan: int = 1) -> dict[str, Any]:
    """n steps; step i reads the outputs of the `fan` steps before it and writes its own."""
    steps = []
    for i in range(n):
        deps = [f"s{j}" for j in range(max(0, i - fan), i)]
        reads = [f"output/s{j}.json" for j in range(max(0, i - fan), i)]
        code = "import json\n" + "".join(f"json.load(open({r!r}))\n" for r in reads)
        code += write_json(f"output/s{i}.json", f'{{"step": {i}}}')
        steps.append(code_step(f"s{i}", code, [f"output/s{i}.json"], depends_on=deps, reads=reads))
    return plan(*steps)


def lanes(n: int, width: int) -> dict[str, Any]:
    """n steps in `width` parallel lanes; step i reads step i - width."""
    steps = []
    for i in range(n):
        prev = i - width
        reads = [f"output/s{prev}.json"] if prev >= 0 else []
        code = "".join(f"open({r!r}).read()\n" for r in reads) + write_json(f"output/s{i}.json")
        steps.append(
            code_step(
                f"s{i}",
                code,
                [f"output/s{i}.json"],
                depends_on=[f"s{prev}"] if prev >= 0 else [],
                reads=reads,
            )
        )
    return plan(*steps)


def report_profile() -> dict[str, Any]:
    """The default profile with the guard at step inputs and outputs in report mode.

    Under `block` (the default) the step_input and step_output phases refuse a file holding a
    credential before anything else sees it; tests of what happens to such files downstream
    (receipts, prompts, the CLI) run with this profile instead.
    """
    from activities.compile.typelib import load_profiles

    layers, _ = load_profiles()
    profile = layers.builtin["default"].model_dump(mode="json")
    profile["profile_id"] = "guard-report"
    for phase in ("step_input", "step_output"):
        profile["validation"]["phases"][phase]["mode"] = "report"
    return profile


def reading_plan() -> dict[str, Any]:
    """One step reading the run input `data` (input/data.csv)."""
    return plan(
        code_step(
            "read",
            "open('input/data.csv').read()\n" + write_json("output/r.json"),
            ["output/r.json"],
            reads=["input/data.csv"],
        ),
        run_inputs=[{"name": "data", "path": "input/data.csv", "kind_key": "table.csv"}],
    )
