"""Normalize file wiring: relative POSIX paths under fixed roots, one writer per path."""

from collections.abc import Iterable
from dataclasses import dataclass

from compiler.plan.contracts.outputs import ResolvedOutput
from compiler.typesystem.library import TypeLibrary
from schemas.diagnostics import Diagnostic
from schemas.plan import ResolvedStep, RunInputDecl

OUTPUT_ROOTS = ("output/", "work/")
READ_ROOTS = ("input/", "output/", "work/")
RUN_INPUT_ROOT = "input/"


@dataclass(frozen=True)
class PathCheck:
    path: str
    problem: str | None


def normalize(path: str, roots: Iterable[str]) -> PathCheck:
    """Return the canonical form of `path`, or why it is refused."""
    roots = tuple(roots)
    p = path[2:] if path.startswith("./") else path
    if not p:
        return PathCheck(path, "is empty")
    if "\\" in p or "\x00" in p:
        return PathCheck(path, "contains a backslash or NUL; use relative POSIX paths")
    if p.startswith("/") or (len(p) > 1 and p[1] == ":"):
        return PathCheck(path, "is absolute; paths are relative to the step workspace")
    segments = p.split("/")
    if any(s == ".." for s in segments):
        return PathCheck(path, "climbs out with '..'")
    if any(s in ("", ".") for s in segments):
        return PathCheck(path, "has an empty or '.' segment")
    if not p.startswith(roots) or len(segments) < 2:
        return PathCheck(path, f"is not under {' or '.join(roots)}")
    return PathCheck(p, None)


def path_diagnostic(
    check: PathCheck, step_key: str | None, field: str, roots: Iterable[str]
) -> Diagnostic:
    roots = tuple(roots)
    return Diagnostic(
        code="E_PATH_ESCAPE",
        step_key=step_key,
        field=field,
        message=f"path {check.path!r} {check.problem}",
        hint=f"use a relative path under {' or '.join(roots)}, e.g. {roots[0]}result.json",
    )


def normalize_step(step: ResolvedStep, problems: list[Diagnostic]) -> ResolvedStep:
    """Canonicalize every path a step names; refused paths become diagnostics and are dropped."""
    key = step.step_key

    def fix(path: str, roots: tuple[str, ...], field: str) -> str | None:
        check = normalize(path, roots)
        if check.problem is not None:
            problems.append(path_diagnostic(check, key, field, roots))
            return None
        return check.path

    outputs = []
    for i, o in enumerate(step.expected_outputs):
        fixed = fix(o.path, OUTPUT_ROOTS, f"expected_outputs[{i}].path")
        if fixed is not None:
            outputs.append(o.model_copy(update={"path": fixed}))
    reads = [
        p
        for i, raw in enumerate(step.input_file_paths)
        if (p := fix(raw, READ_ROOTS, f"input_file_paths[{i}]")) is not None
    ]
    ins = []
    for n, inp in enumerate(step.abstract_inputs):
        if inp.path is None:
            ins.append(inp)
        elif (fixed := fix(inp.path, READ_ROOTS, f"abstract_inputs[{n}].path")) is not None:
            ins.append(inp.model_copy(update={"path": fixed}))
    outs = [
        o.model_copy(update={"path": normalize(o.path, OUTPUT_ROOTS).path})
        if o.path is not None
        else o
        for o in step.abstract_outputs
    ]
    contracts = {normalize(p, OUTPUT_ROOTS).path: c for p, c in step.artifact_contracts.items()}
    return step.model_copy(
        update={
            "expected_outputs": outputs,
            "input_file_paths": reads,
            "abstract_inputs": ins,
            "abstract_outputs": outs,
            "artifact_contracts": contracts,
        }
    )


def run_input_outputs(
    decls: list[RunInputDecl], lib: TypeLibrary, problems: list[Diagnostic]
) -> dict[str, ResolvedOutput]:
    """Run inputs as producers (step_key ''), keyed by name; paths must live under input/."""
    result: dict[str, ResolvedOutput] = {}
    for i, decl in enumerate(decls):
        field = f"run_inputs[{i}]"
        check = normalize(decl.path, (RUN_INPUT_ROOT,))
        if check.problem is not None:
            problems.append(path_diagnostic(check, None, field + ".path", (RUN_INPUT_ROOT,)))
            continue
        kind = decl.kind_key
        if kind is None:
            inferred = lib.kind_for_path(check.path)
            kind = inferred.kind_key if inferred else None
        if kind is None or kind not in lib.kinds:
            problems.append(
                Diagnostic(
                    code="E_UNKNOWN_KIND" if kind else "E_BAD_EXTENSION",
                    field=field,
                    message=f"run input {decl.name!r}: kind {kind!r} is unknown"
                    if kind
                    else f"run input {decl.name!r}: {check.path!r} has no recognized extension",
                    hint="declare kind_key with a library kind (`forge packs list`)",
                )
            )
            continue
        if decl.entity_schema_id is not None and decl.entity_schema_id not in lib.entities:
            problems.append(
                Diagnostic(
                    code="E_UNKNOWN_ENTITY",
                    field=field + ".entity_schema_id",
                    message=f"run input {decl.name!r}: entity {decl.entity_schema_id!r} is unknown",
                    hint="use an entity from `forge packs show <domain>`",
                )
            )
            continue
        if decl.name in result:
            problems.append(
                Diagnostic(
                    code="E_DUPLICATE_WRITER",
                    field=field + ".name",
                    message=f"run input name {decl.name!r} is declared twice",
                    hint="give every run input a unique name",
                )
            )
        result[decl.name] = ResolvedOutput(
            "",
            decl.name,
            check.path,
            kind,
            decl.entity_schema_id,
            lib.canonical_profile(decl.entity_schema_id, kind),
        )
    return result
