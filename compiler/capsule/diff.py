"""What changed between two capsule versions (`forge capsule diff NAME@A NAME@B`, issue 16).

Pure: the programs' text comes from `code_of` (sha256 -> text), which the caller backs with the
artifact store, and it is asked only for programs whose sha256 differs between the versions.
"""

import difflib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from schemas.base import FrozenModel
from schemas.capsule import (
    CapsuleContent,
    CapsuleDiff,
    CapsuleVersion,
    CodeCell,
    InputChange,
    InputParameter,
    ScalarChange,
    ScalarParameter,
    StepChange,
    StepChangeKind,
    ValueChange,
)

__all__ = ["diff_capsules", "tree_changes"]

_STEP_FIELDS = ("backend", "source", "structural", "params_read")
# observed_rows and source_sha256 describe the source run's file, not what a new input must be.
_INPUT_FIELDS = ("path", "kind_key", "validator", "row_shape")
_SCALAR_FIELDS = ("type", "default", "description", "read_by")


def diff_capsules(
    a: CapsuleVersion, b: CapsuleVersion, code_of: Callable[[str], str]
) -> CapsuleDiff:
    """Every difference from version `a` to version `b`; `code_of` maps a blob sha256 to text."""
    ca, cb = a.content, b.content
    inputs = _inputs(ca.inputs, cb.inputs)
    scalars = _scalars(ca.scalars, cb.scalars)
    covered = {c.name for c in inputs} | {c.name for c in scalars}
    schema = [
        c
        for c in tree_changes(ca.parameter_schema, cb.parameter_schema, pointer=True)
        if not _under_property(c.path, covered)
    ]
    return CapsuleDiff(
        ref_a=a.ref,
        ref_b=b.ref,
        capsule_hash_a=a.capsule_hash,
        capsule_hash_b=b.capsule_hash,
        identical=a.capsule_hash == b.capsule_hash,
        plan_hash=_value("plan_hash", ca.plan_hash, cb.plan_hash),
        goal_template=_value("goal_template", ca.goal_template, cb.goal_template),
        steps=_steps(ca, cb, code_of),
        inputs=inputs,
        scalars=scalars,
        parameter_schema=schema,
        governance=tree_changes(ca.governance, cb.governance, pointer=False),
        isolation_policy=tree_changes(ca.isolation_policy, cb.isolation_policy, pointer=False),
    )


def tree_changes(old: Any, new: Any, *, pointer: bool, path: str = "") -> list[ValueChange]:
    """Leaf-level changes between two JSON values, at JSON pointers or dotted keys.

    Objects are compared key by key; with `pointer` lists are compared index by index (a JSON
    pointer names an element), otherwise a changed list is one change (a dotted key cannot).
    """
    if isinstance(old, dict) and isinstance(new, dict):
        found: list[ValueChange] = []
        for key in [*old, *(k for k in new if k not in old)]:
            where = _join(path, str(key), pointer)
            if key not in new:
                found.append(ValueChange(path=where, change="removed", old=old[key]))
            elif key not in old:
                found.append(ValueChange(path=where, change="added", new=new[key]))
            else:
                found += tree_changes(old[key], new[key], pointer=pointer, path=where)
        return found
    if pointer and isinstance(old, list) and isinstance(new, list):
        found = []
        for i in range(max(len(old), len(new))):
            where = _join(path, str(i), pointer)
            if i >= len(new):
                found.append(ValueChange(path=where, change="removed", old=old[i]))
            elif i >= len(old):
                found.append(ValueChange(path=where, change="added", new=new[i]))
            else:
                found += tree_changes(old[i], new[i], pointer=pointer, path=where)
        return found
    if _same(old, new):
        return []
    return [ValueChange(path=path or ("" if pointer else "."), change="changed", old=old, new=new)]


def _join(path: str, key: str, pointer: bool) -> str:
    if pointer:
        return f"{path}/{key.replace('~', '~0').replace('/', '~1')}"
    return f"{path}.{key}" if path else key


def _same(old: Any, new: Any) -> bool:
    # 1 == 1.0 == True in Python; their JSON differs, and so does the capsule hash.
    return _json(old) == _json(new)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _under_property(pointer: str, names: set[str]) -> bool:
    """The pointer is inside `properties/<name>` of a parameter already shown on its own."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
    return any(p == "properties" and q in names for p, q in zip(parts, parts[1:], strict=False))


def _value(path: str, old: str, new: str) -> ValueChange | None:
    return None if old == new else ValueChange(path=path, change="changed", old=old, new=new)


def _fields(old: FrozenModel, new: FrozenModel, names: Sequence[str]) -> list[ValueChange]:
    a, b = old.model_dump(mode="json"), new.model_dump(mode="json")
    return [
        ValueChange(path=n, change="changed", old=a[n], new=b[n])
        for n in names
        if not _same(a[n], b[n])
    ]


def _inputs(old: Sequence[InputParameter], new: Sequence[InputParameter]) -> list[InputChange]:
    a, b = {p.name: p for p in old}, {p.name: p for p in new}
    found = []
    for name in _union(a, b):
        if name not in b:
            found.append(InputChange(name=name, change="removed"))
        elif name not in a:
            found.append(InputChange(name=name, change="added"))
        else:
            columns = tree_changes(
                {c.name: c.type for c in a[name].columns},
                {c.name: c.type for c in b[name].columns},
                pointer=False,
            )
            fields = _fields(a[name], b[name], _INPUT_FIELDS)
            if columns or fields:
                found.append(
                    InputChange(name=name, change="changed", columns=columns, fields=fields)
                )
    return found


def _scalars(old: Sequence[ScalarParameter], new: Sequence[ScalarParameter]) -> list[ScalarChange]:
    a, b = {p.name: p for p in old}, {p.name: p for p in new}
    found = []
    for name in _union(a, b):
        if name not in b:
            found.append(ScalarChange(name=name, change="removed"))
        elif name not in a:
            found.append(ScalarChange(name=name, change="added"))
        elif fields := _fields(a[name], b[name], _SCALAR_FIELDS):
            found.append(ScalarChange(name=name, change="changed", fields=fields))
    return found


def _union(a: Mapping[str, object], b: Mapping[str, object]) -> list[str]:
    """A's keys in order, then the keys only B has, in B's order."""
    return list(dict.fromkeys([*a, *b]))


def _steps(a: CapsuleContent, b: CapsuleContent, code_of: Callable[[str], str]) -> list[StepChange]:
    programs_a = {p.step_key: p for p in a.programs}
    programs_b = {p.step_key: p for p in b.programs}
    keys_a = dict.fromkeys([*programs_a, *a.contracts])
    keys_b = dict.fromkeys([*programs_b, *b.contracts])
    found = []
    for key in _union(keys_a, keys_b):
        pa, pb = programs_a.get(key), programs_b.get(key)
        cells_a, cells_b = (pa.cells if pa else []), (pb.cells if pb else [])
        contract_a, contract_b = a.contracts.get(key), b.contracts.get(key)
        fields: list[ValueChange] = []
        code = ""
        kind: StepChangeKind
        if key not in keys_b:
            kind = "removed"
        elif key not in keys_a:
            kind = "added"
        else:
            fields = _fields(pa, pb, _STEP_FIELDS) if pa and pb else []
            code = _code_diff(key, cells_a, cells_b, code_of)
            same = contract_a == contract_b and len(cells_a) == len(cells_b)
            kind = "unchanged" if same and not fields and not code else "changed"
        found.append(
            StepChange(
                step_key=key,
                change=kind,
                contract_a=contract_a,
                contract_b=contract_b,
                fields=fields,
                cells_a=len(cells_a),
                cells_b=len(cells_b),
                code_diff=code,
            )
        )
    return found


def _code_diff(
    key: str, old: Sequence[CodeCell], new: Sequence[CodeCell], code_of: Callable[[str], str]
) -> str:
    """A unified diff of the cells that differ, compared in order; extra cells diff /dev/null."""
    parts = []
    for i in range(max(len(old), len(new))):
        ca = old[i] if i < len(old) else None
        cb = new[i] if i < len(new) else None
        if ca and cb and ca.code.sha256 == cb.code.sha256:
            continue
        lines = difflib.unified_diff(
            code_of(ca.code.sha256).splitlines(keepends=True) if ca else [],
            code_of(cb.code.sha256).splitlines(keepends=True) if cb else [],
            fromfile=f"a/{key}/turn-{ca.turn}.py" if ca else "/dev/null",
            tofile=f"b/{key}/turn-{cb.turn}.py" if cb else "/dev/null",
        )
        # As git shows it: a last line without a newline is marked, not silently joined.
        parts += [
            ln if ln.endswith("\n") else f"{ln}\n\\ No newline at end of file\n" for ln in lines
        ]
    return "".join(parts)
