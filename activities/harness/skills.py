"""Skill packages for one step's sandbox: governance re-checked, then host directories to bind.

The runtime's layer of defense in depth (seed 000 §7.4): every skill a step binds is checked
again against the frozen skill policy and the digest sealed in its contract before anything is
materialized, and all of them are checked before any is. Registry skills are written, verified
and read-only, under the staging directory; directory-backed skills (stdlib/skills, a pack's
skills/) are bound from where they were loaded, after their SKILL.md and output schema are read
again and hashed, and the directory is walked for symlinks and special files.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from activities.sandbox.workspace import WorkspaceViolation, safe_read
from activities.store.skill_packages import (
    MAX_FILE_BYTES,
    MAX_FILES,
    SKILL_FILE,
    SkillPackageRefused,
    SkillRegistryError,
    package_files,
    remove_tree,
    seal_tree,
)
from activities.store.skills_registry import REGISTRY_SOURCE, SkillRegistry
from compiler.plan.discovery import governance_refusal
from compiler.recipes.skillpack import skill_package
from compiler.recipes.skills import NAME, RecipeImportError
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.profile import SkillPolicy
from schemas.skills import SkillPackage

__all__ = ["SkillGovernanceError", "skill_dirs_for"]


class SkillGovernanceError(ForgeError):
    """A step may not load a skill; permanent: the plan must be recompiled or the policy changed."""

    code = ErrorCode.SKILL_DENIED

    def __init__(self, skill_id: str, reason: str) -> None:
        self.skill_id = skill_id
        self.reason = reason
        super().__init__(f"skill {skill_id!r} refused before materialization: {reason}")


def skill_dirs_for(
    step_skill_ids: Iterable[str],
    library_skills: Mapping[str, SkillPackage],
    registry: SkillRegistry | None,
    tenant_id: str,
    policy: SkillPolicy,
    bound_sha: Mapping[str, str],
    staging: Path,
) -> dict[str, Path]:
    """{skill_id: host directory} to bind read-only at /skills/<skill_id> for one step.

    `library_skills` are the skills the run compiled against (stdlib/pack skills merged with
    the tenant's registry skills); `bound_sha` holds the digest each binding sealed into the
    contract; registry skills are materialized under `staging`.

    Raises:
        SkillGovernanceError: A skill is denied, unknown, deprecated, unbound, changed since
            the contract was compiled, unsafe on disk, or cannot be materialized; nothing is
            materialized when any skill is refused before materialization.
    """
    wanted = list(dict.fromkeys(step_skill_ids))
    for skill_id in wanted:
        _recheck(skill_id, library_skills, policy, bound_sha)
    dirs: dict[str, Path] = {}
    for skill_id in wanted:
        skill = library_skills[skill_id]
        if skill.source.startswith(REGISTRY_SOURCE):
            dirs[skill_id] = _from_registry(skill_id, registry, tenant_id, bound_sha, staging)
        else:
            dirs[skill_id] = _from_directory(skill, bound_sha[skill_id], staging)
    return dirs


def _recheck(
    skill_id: str,
    skills: Mapping[str, SkillPackage],
    policy: SkillPolicy,
    bound_sha: Mapping[str, str],
) -> None:
    if not NAME.fullmatch(skill_id):
        raise SkillGovernanceError(
            skill_id, "not a skill name (lower-case letters, digits, single hyphens); recompile"
        )
    bound = bound_sha.get(skill_id)
    refusal = governance_refusal(skill_id, policy, skills, bound_sha256=bound)
    if refusal is not None:
        raise SkillGovernanceError(skill_id, refusal)
    if bound is None:
        raise SkillGovernanceError(
            skill_id,
            "the step's contract seals no sha256 for it, so its version cannot be verified; "
            "recompile the plan so Pass D binds the skill",
        )


def _from_registry(
    skill_id: str,
    registry: SkillRegistry | None,
    tenant_id: str,
    bound_sha: Mapping[str, str],
    staging: Path,
) -> Path:
    if registry is None:
        raise SkillGovernanceError(
            skill_id,
            "it is a registry skill but this worker has no skill registry; start the worker "
            "with the same FORGE_DATABASE_URL and FORGE_ARTIFACTS_URL the plan was compiled with",
        )
    try:
        return registry.materialize(tenant_id, skill_id, bound_sha[skill_id], staging)
    except SkillRegistryError as exc:
        raise SkillGovernanceError(skill_id, str(exc)) from None


def _from_directory(skill: SkillPackage, bound: str, staging: Path) -> Path:
    """A verified, read-only copy under `staging` of the directory a skill was loaded from."""
    # As activities.compile.typelib displays it: cwd-relative or absolute.
    skill_md = Path(skill.source)
    directory = skill_md.parent.absolute()
    where = str(directory)
    if skill_md.name != SKILL_FILE or directory.name != skill.skill_id:
        raise SkillGovernanceError(
            skill.skill_id,
            f"its source {skill.source!r} is not <dir>/{skill.skill_id}/{SKILL_FILE}; reload the "
            "skill library and recompile",
        )
    try:
        listed = package_files(directory, MAX_FILES, MAX_FILE_BYTES)
    except SkillPackageRefused as exc:
        raise SkillGovernanceError(
            skill.skill_id, f"{exc}; fix the package and recompile"
        ) from None
    if SKILL_FILE not in {rel for rel, _, _ in listed}:
        raise SkillGovernanceError(skill.skill_id, f"{where} holds no {SKILL_FILE} any more")
    staging.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=staging, prefix=f".{skill.skill_id}."))
    try:
        for rel, _, _ in listed:
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_bytes(_read_listed(skill.skill_id, directory, rel))
        _verify_copy(skill, bound, work, [rel for rel, _, _ in listed], where)
        seal_tree(work)
        target = staging / skill.skill_id
        remove_tree(target)
        work.rename(target)
    except BaseException:
        remove_tree(work)
        raise
    return target


def _read_listed(skill_id: str, directory: Path, rel: str) -> bytes:
    """A listed file's bytes, read without following a symlink planted since it was listed."""
    try:
        return safe_read(directory, rel, MAX_FILE_BYTES)
    except (WorkspaceViolation, FileNotFoundError) as exc:
        raise SkillGovernanceError(
            skill_id, f"{directory}: {exc} (it changed while being staged); fix the package"
        ) from None


def _verify_copy(skill: SkillPackage, bound: str, copy: Path, rels: list[str], where: str) -> None:
    """The copy hashes to the digest the contract sealed (what is bound is what was checked)."""

    def read(name: str) -> str | None:
        return (copy / name).read_text(encoding="utf-8") if name in rels else None

    try:
        # Read as activities.compile.typelib.load_skills reads it, so the digest is the loader's
        # digest.
        current = skill_package(
            (copy / SKILL_FILE).read_text(encoding="utf-8"),
            skill.skill_id,
            read_file=read,
            files=rels,
            source=skill.source,
        )
    except (RecipeImportError, UnicodeDecodeError) as exc:
        raise SkillGovernanceError(
            skill.skill_id, f"{where}: its {SKILL_FILE} no longer loads ({exc}); fix it"
        ) from None
    if current.sha256 != bound:
        raise SkillGovernanceError(
            skill.skill_id,
            f"{where} changed on disk since the contract was compiled: it hashes to "
            f"{current.sha256}, the contract is bound to {bound}; recompile the plan",
        )
