"""Cross-reference checks over a parsed type library: every name must resolve."""

from collections.abc import Callable, Mapping
from typing import Any

import jsonschema

from compiler.ladder.rules import rule_problem
from compiler.typesystem import naming
from schemas.typesystem import (
    Adapter,
    ArtifactKind,
    ArtifactProfile,
    CrossStepSlot,
    DomainPack,
    EntitySchema,
    PolicyProfile,
    WorkflowPack,
)

GENERIC_SCOPE = "generic"
Problem = Callable[[str, str, str], None]


def is_generic(entity_id: str | None) -> bool:
    """True for a missing entity or one in the `generic.` scope."""
    return entity_id is None or entity_id.split(".", 1)[0] == GENERIC_SCOPE


def check_json_schema(schema: dict[str, Any]) -> str | None:
    """Return why `schema` is not a valid draft 2020-12 JSON Schema, or None."""
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return f"not a valid JSON Schema: {exc.message}"
    return None


def check_library(
    objs: Mapping[str, Mapping[str, Any]], src: Mapping[str, str], problem: Problem
) -> tuple[dict[str, EntitySchema], dict[str, str], dict[str, ArtifactProfile]]:
    """Check names and references; return the entity and profile indexes."""
    kinds: Mapping[str, ArtifactKind] = objs["kinds"]
    _check_kinds(kinds, src, problem)
    _check_slots(objs["slots"], kinds, src, problem)
    policies: Mapping[str, PolicyProfile] = objs["policy"]
    for key in policies:
        if naming.POLICY_ID.match(key) is None:
            problem(src[key], "policy_profile_id", f"{key!r} must be <scope>.<name>.v<major>")
    entities: dict[str, EntitySchema] = {}
    entity_domain: dict[str, str] = {}
    for key, ent in objs["generic"].items():
        if not key.startswith(GENERIC_SCOPE + "."):
            problem(src[key], "entity_schema_id", f"generic entity {key!r} must be generic.*")
        entities[key] = ent
        entity_domain[key] = GENERIC_SCOPE
    domains: Mapping[str, DomainPack] = objs["domain"]
    for pack_id, pack in domains.items():
        _check_domain(pack, src[pack_id], problem, entities, entity_domain, policies, domains)
    profiles = _check_profiles(domains, kinds, entities, src, problem)
    _check_workflows(objs["workflow"], objs["slots"], src, problem)
    _check_adapters(objs["adapters"], kinds, src, problem)
    return entities, entity_domain, profiles


def _check_kinds(
    kinds: Mapping[str, ArtifactKind], src: Mapping[str, str], problem: Problem
) -> None:
    for key, kind in kinds.items():
        _check(problem, src[key], "kind_key", naming.kind_key_problem(key))
        expected = ".".join(x for x in (kind.family, kind.representation, kind.subtype) if x)
        if expected != key:
            problem(
                src[key], f"{key}.kind_key", f"does not match family/representation {expected!r}"
            )


def _check_slots(
    slots: Mapping[str, CrossStepSlot],
    kinds: Mapping[str, ArtifactKind],
    src: Mapping[str, str],
    problem: Problem,
) -> None:
    for key, slot in slots.items():
        if naming.SLOT_ID.match(key) is None:
            problem(src[key], "slot_id", f"slot_id {key!r} must be lower_snake_case")
        for k in slot.default_kind_keys:
            if k not in kinds:
                problem(src[key], f"{key}.default_kind_keys", f"unknown kind {k!r}")


def _check_profiles(
    domains: Mapping[str, DomainPack],
    kinds: Mapping[str, ArtifactKind],
    entities: Mapping[str, EntitySchema],
    src: Mapping[str, str],
    problem: Problem,
) -> dict[str, ArtifactProfile]:
    profiles: dict[str, ArtifactProfile] = {}
    for pack_id, pack in domains.items():
        source = src[pack_id]
        for i, prof in enumerate(pack.canonical_profiles):
            where = f"canonical_profiles[{i}]"
            _check(
                problem, source, where, naming.profile_id_problem(prof.profile_id, prof.kind_key)
            )
            if prof.kind_key not in kinds:
                problem(source, where + ".kind_key", f"unknown kind {prof.kind_key!r}")
            if prof.entity_schema_id not in entities:
                problem(
                    source, where + ".entity_schema_id", f"unknown entity {prof.entity_schema_id!r}"
                )
            if prof.profile_id in profiles:
                problem(source, where, f"duplicate profile {prof.profile_id!r}")
            profiles[prof.profile_id] = prof
    return profiles


def _check_workflows(
    workflows: Mapping[str, WorkflowPack],
    slots: Mapping[str, CrossStepSlot],
    src: Mapping[str, str],
    problem: Problem,
) -> None:
    for pack_id, wf in workflows.items():
        if naming.PACK_ID.match(pack_id) is None:
            problem(src[pack_id], "workflow_pack_id", f"{pack_id!r} must be lower-kebab-case")
        for side in ("inputs", "outputs"):
            for s in getattr(wf.typical_slots, side):
                if s not in slots:
                    problem(src[pack_id], f"typical_slots.{side}", f"unknown slot {s!r}")
        _check_rules(wf.disambiguation, pack_id, workflows, src[pack_id], problem)


def _check_adapters(
    adapters: Mapping[str, Adapter],
    kinds: Mapping[str, ArtifactKind],
    src: Mapping[str, str],
    problem: Problem,
) -> None:
    for key, ad in adapters.items():
        if naming.ADAPTER_ID.match(key) is None:
            problem(src[key], "adapter_id", f"{key!r} must start with 'adapt.'")
        for field in ("from_kind", "to_kind"):
            if getattr(ad, field) not in kinds:
                problem(src[key], f"{key}.{field}", f"unknown kind {getattr(ad, field)!r}")
        if ad.from_kind == ad.to_kind:
            problem(src[key], f"{key}.to_kind", "an adapter must change the kind")


def _check_domain(
    pack: DomainPack,
    source: str,
    problem: Problem,
    entities: dict[str, EntitySchema],
    entity_domain: dict[str, str],
    policies: Mapping[str, PolicyProfile],
    domains: Mapping[str, DomainPack],
) -> None:
    if naming.PACK_ID.match(pack.domain_pack_id) is None:
        problem(source, "domain_pack_id", f"{pack.domain_pack_id!r} must be lower-kebab-case")
    fields: set[str] = set()
    for i, ent in enumerate(pack.entity_schemas):
        where = f"entity_schemas[{i}]"
        _check(
            problem,
            source,
            where + ".entity_schema_id",
            naming.entity_id_problem(ent.entity_schema_id),
        )
        _check(problem, source, where + ".json_schema", check_json_schema(ent.json_schema))
        if ent.entity_schema_id in entities:
            problem(source, where, f"entity {ent.entity_schema_id!r} is defined twice")
        entities[ent.entity_schema_id] = ent
        entity_domain[ent.entity_schema_id] = pack.domain_pack_id
        props = ent.json_schema.get("properties", {})
        fields.update(props if isinstance(props, dict) else {})
        for k in ent.key_fields:
            if k not in props:
                problem(source, where + ".key_fields", f"key field {k!r} is not a property")
        for j, rule in enumerate(ent.rules):
            _check(problem, source, f"{where}.rules[{j}].logic", rule_problem(rule.logic, 32))
    for alias, canonical in pack.synonyms.items():
        if canonical not in fields:
            problem(
                source,
                f"synonyms.{alias}",
                f"canonical field {canonical!r} is in no entity of the pack",
            )
    if pack.default_policy_profile_id not in policies:
        problem(
            source,
            "default_policy_profile_id",
            f"unknown policy {pack.default_policy_profile_id!r}",
        )
    _check_rules(pack.disambiguation, pack.domain_pack_id, domains, source, problem)


def _check_rules(
    rules: Any, own_id: str, peers: Mapping[str, Any], source: str, problem: Problem
) -> None:
    for i, rule in enumerate(rules):
        if rule.prefer != own_id:
            problem(source, f"disambiguation[{i}].prefer", f"must be the pack's own id {own_id!r}")
        for other in rule.over:
            if other not in peers:
                problem(source, f"disambiguation[{i}].over", f"unknown pack {other!r}")


def _check(problem: Problem, source: str, field: str, message: str | None) -> None:
    if message is not None:
        problem(source, field, message)
