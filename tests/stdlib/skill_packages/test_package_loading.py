"""Loading the stdlib skill packages, and the read-only skill binding in the sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from activities.compile.typelib import load_skills
from activities.sandbox.runner import run_sandboxed
from compiler.recipes.skillpack import compose_from_library
from compiler.recipes.skills import transpile_skill
from schemas.skills import SkillPackage
from tests.stdlib.skill_packages.support import (
    LIMITS,
    PACKAGES,
    REPORT,
    SALES,
    SKILLS_DIR,
    STAGED,
    TABLE,
    put,
    read_json,
    run,
)
from tests.support.sandbox import needs_bwrap

# --- loading ----------------------------------------------------------------------------------


@pytest.mark.parametrize("skill_id", sorted(PACKAGES))
def test_the_package_loads_through_the_real_loader_with_its_schema(
    skill_id: str, skills: dict[str, SkillPackage]
) -> None:
    schema_file, scripts, modules = PACKAGES[skill_id]
    package = skills[skill_id]
    assert package.output_schema == read_json(SKILLS_DIR / skill_id / schema_file)
    Draft202012Validator.check_schema(package.output_schema)
    code = [f"scripts/{name}" for name in [*scripts, *modules]]
    assert {"SKILL.md", "REFERENCE.md", schema_file, *code} <= set(package.files)
    assert not [f for f in package.files if "__pycache__" in f]
    assert load_skills(SKILLS_DIR)[skill_id] == package
    text = (SKILLS_DIR / skill_id / "SKILL.md").read_text(encoding="utf-8")
    front = yaml.safe_load(text.split("---")[1])
    assert front["metadata"] == {"forge-output-schema": schema_file, "version": "1.0.0"}
    # The SKILL.md bridge accepts it too: a procedure of numbered steps, no directives.
    assert len(transpile_skill(text, skill_id).steps) >= 4
    reference = (SKILLS_DIR / skill_id / "REFERENCE.md").read_text(encoding="utf-8")
    for script in scripts:  # both documents give the path the step calls
        assert f"python /skills/{skill_id}/scripts/{script}" in text
        assert f"python /skills/{skill_id}/scripts/{script}" in reference


def test_the_report_package_declares_its_assets(skills: dict[str, SkillPackage]) -> None:
    files = set(skills[REPORT].files)
    manifest = read_json(SKILLS_DIR / REPORT / "assets" / "theme-manifest.json")
    assert {"standard", "executive-brief", "dashboard"} <= set(manifest["templates"])
    assert {"modern", "executive", "minimal"} <= set(manifest["themes"])
    for entry in [*manifest["templates"].values(), *manifest["themes"].values()]:
        assert f"assets/{entry['file']}" in files
    Draft202012Validator.check_schema(
        read_json(SKILLS_DIR / REPORT / "references" / "content-schema.json")
    )


def test_new_packages_leave_compose_from_library_matches_alone(
    skills: dict[str, SkillPackage],
) -> None:
    spec = compose_from_library("infer the type of every column and count distinct values", skills)
    assert spec is not None and spec.lineage["skills"] == "csv-profile"
    assert (
        compose_from_library("compose a sonnet about autumn leaves for my mother", skills) is None
    )


# --- the sandbox binding ----------------------------------------------------------------------


@needs_bwrap
def test_the_skill_directory_is_read_only_in_the_sandbox(ws: Path) -> None:
    sales = put(ws, "sales.csv", SALES)
    result = run(
        ws, TABLE, "table.py", "convert", sales, "--out", f"/skills/{TABLE}/scripts/planted.csv"
    )
    assert result.exit_code == 1
    assert f"cannot write /skills/{TABLE}/scripts/planted.csv: Read-only file system" in (
        result.stderr
    )
    (ws / "meta").mkdir(exist_ok=True)
    (ws / "meta" / "step.py").write_text(
        "import os\n"
        f"print(sorted(os.listdir('/skills/{TABLE}/scripts')))\n"
        f"targets = [('/skills/{TABLE}/new.txt', 'w'), ('/skills/{TABLE}/SKILL.md', 'a')]\n"
        "for path, mode in targets:\n"
        "    try:\n"
        "        open(path, mode).write('x')\n"
        "        print('WROTE', path)\n"
        "    except OSError as exc:\n"
        "        print('refused', exc.errno)\n"
    )
    probe = run_sandboxed(
        ["python", "/workspace/meta/step.py"],
        workspace=ws,
        limits=LIMITS,
        skills={TABLE: STAGED[TABLE]},
    )
    assert probe.exit_code == 0, probe.stderr
    listing, created, appended = probe.stdout.splitlines()
    assert listing == "['table.py', 'tableio.py', 'tableprofile.py']"
    # A new file: EROFS. An existing root-owned file: EACCES comes first for the sandbox uid.
    assert created == "refused 30" and appended in ("refused 13", "refused 30")
    assert not (STAGED[TABLE] / "new.txt").exists()
    assert not (STAGED[TABLE] / "scripts" / "planted.csv").exists()
