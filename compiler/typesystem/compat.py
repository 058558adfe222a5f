"""The 5-rank compatibility algorithm of seed 000 §4.6: a valid binding, or a rejection."""

from dataclasses import dataclass
from typing import Literal

from compiler.typesystem.checks import is_generic
from compiler.typesystem.library import TypeLibrary
from schemas.typesystem import Adapter, PolicyProfile


@dataclass(frozen=True)
class Producer:
    entity_schema_id: str | None
    kind_key: str
    profile_id: str | None


@dataclass(frozen=True)
class Consumer:
    entity_schema_id: str | None
    accepted_kind_keys: tuple[str, ...]


@dataclass(frozen=True)
class Compatibility:
    """Rank 1..4 when compatible; otherwise rank 5 with the error code and why."""

    rank: Literal[1, 2, 3, 4, 5]
    reason: str
    adapter: Adapter | None = None
    error: Literal["E_INCOMPATIBLE_BINDING", "E_POLICY"] | None = None

    @property
    def ok(self) -> bool:
        return self.rank < 5


def rank_binding(
    producer: Producer, consumer: Consumer, policy: PolicyProfile, library: TypeLibrary
) -> Compatibility:
    """Rank one producer -> consumer binding under the consumer's policy profile."""
    accepted = consumer.accepted_kind_keys
    p_ent, c_ent = producer.entity_schema_id, consumer.entity_schema_id
    # A generic entity named on both sides is a deliberate type, not an inference.
    if p_ent != c_ent and (is_generic(p_ent) or is_generic(c_ent)):
        return _generic(producer, consumer, policy, library)
    if p_ent is None or c_ent is None:
        return _generic(producer, consumer, policy, library)
    if p_ent != c_ent:
        return Compatibility(
            5,
            f"entity {p_ent} cannot feed {c_ent}: different semantics",
            error="E_INCOMPATIBLE_BINDING",
        )
    primary = accepted[0]
    if producer.kind_key == primary and producer.profile_id == library.canonical_profile(
        c_ent, primary
    ):
        return Compatibility(1, f"exact: {c_ent} as {primary}")
    if producer.kind_key in accepted:
        return Compatibility(2, f"same entity {c_ent}; {producer.kind_key} is an accepted kind")
    adapter = library.adapter_between(producer.kind_key, accepted)
    if adapter is None:
        return Compatibility(
            5,
            f"{c_ent} arrives as {producer.kind_key}; consumer accepts {', '.join(accepted)} "
            "and no adapter converts between them",
            error="E_INCOMPATIBLE_BINDING",
        )
    if not policy.allow_adapters:
        return Compatibility(
            5,
            f"{adapter.adapter_id} could convert {producer.kind_key} to {adapter.to_kind}, but "
            f"{policy.policy_profile_id} forbids inserting adapters",
            adapter=adapter,
            error="E_POLICY",
        )
    return Compatibility(3, f"same entity {c_ent}; adapter {adapter.adapter_id}", adapter=adapter)


def _generic(
    producer: Producer, consumer: Consumer, policy: PolicyProfile, library: TypeLibrary
) -> Compatibility:
    accepted = consumer.accepted_kind_keys
    if producer.kind_key in accepted:
        adapter = None
    else:
        adapter = library.adapter_between(producer.kind_key, accepted)
        if adapter is None:
            return Compatibility(
                5,
                f"generic binding impossible: {producer.kind_key} is not among "
                f"{', '.join(accepted)}",
                error="E_INCOMPATIBLE_BINDING",
            )
    if not policy.allow_generic_inference:
        return Compatibility(
            5,
            f"binding {producer.entity_schema_id or 'an untyped producer'} to "
            f"{consumer.entity_schema_id or 'an untyped consumer'} is only generic-compatible, "
            f"which {policy.policy_profile_id} does not allow",
            error="E_POLICY",
        )
    return Compatibility(4, "generic compatible under " + policy.policy_profile_id, adapter=adapter)
