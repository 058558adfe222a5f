"""Sealing a capsule: its hash, the blobs it names, and the re-verification of its plan.

`capsule_hash` is the sha256 of the RFC 8785 JSON of the content (compiler.hashing.sha256_of),
fields at their default left out; the name and version number are not in it. The content
names the compiled plan and every program by their sha256, so the hash seals their bytes as
well; `check_plan` re-derives every contract hash and the plan hash from the plan itself, so a
plan edited after extraction (or a blob swapped for another with the same name) is refused
before anything runs.
"""

from compiler.hashing import sha256_of
from compiler.plan.contracts.finalize import rehash
from compiler.plan.passes.contracts import plan_hash
from schemas.artifacts import ArtifactRef
from schemas.capsule import CapsuleContent
from schemas.compiled import CompiledPlan
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError

__all__ = ["SealBroken", "capsule_hash", "check_plan", "content_blobs"]


class SealBroken(ForgeError, ValueError):
    """The content, plan or a program does not match what the capsule was sealed with."""

    code = ErrorCode.CAPSULE_TAMPERED


def capsule_hash(content: CapsuleContent) -> str:
    """`sha256:<hex>` over the RFC 8785 JSON of the content (not its name or version).

    Fields at their default are left out, so a later Forge that adds a field (with a default)
    to the content keeps every hash already stored.
    """
    return sha256_of(content.model_dump(mode="json", exclude_defaults=True))


def content_blobs(content: CapsuleContent) -> list[ArtifactRef]:
    """Every artifact the content names (plan, programs, receipts), each once, sorted by sha256."""
    refs = [content.plan_template]
    refs += [cell.code for program in content.programs for cell in program.cells]
    for receipts in content.provenance.receipts.values():
        refs += [receipts.preflight, receipts.postflight]
    unique = {ref.sha256: ref for ref in refs}
    return [unique[k] for k in sorted(unique)]


def check_plan(content: CapsuleContent, plan: CompiledPlan) -> None:
    """The compiled plan is the one sealed: every contract re-hashed, the plan hash re-derived.

    Raises:
        SealBroken: a step whose contract no longer hashes to its contract_hash, a contract
            the content does not name, or a plan hash that differs.
    """
    problems = []
    seen = {}
    for step in plan.steps:
        again = rehash(step).contract_hash
        if again != step.contract_hash:
            problems.append(
                f"step {step.step_key}: its contract hashes to {again}, sealed as "
                f"{step.contract_hash}"
            )
        seen[step.step_key] = step.contract_hash
    if seen != content.contracts:
        changed = sorted(set(seen) ^ set(content.contracts)) or sorted(
            k for k in seen if seen[k] != content.contracts.get(k)
        )
        problems.append(f"the plan's contracts differ from the capsule's for {', '.join(changed)}")
    derived = plan_hash(plan.mission, plan.steps)
    if derived != plan.plan_hash or plan.plan_hash != content.plan_hash:
        problems.append(
            f"the plan hashes to {derived}; the plan says {plan.plan_hash} and the capsule "
            f"{content.plan_hash}"
        )
    if problems:
        raise SealBroken("; ".join(problems))
