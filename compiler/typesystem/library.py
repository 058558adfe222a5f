"""The type library: built purely from parsed documents, checked, indexed and hashed."""

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import Field, ValidationError

from compiler.errors import PackError
from compiler.hashing import sha256_of
from compiler.typesystem.checks import GENERIC_SCOPE, check_library, is_generic
from schemas.base import FrozenModel
from schemas.skills import SkillPackage
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

Category = Literal["kinds", "slots", "generic", "domain", "workflow", "policy", "adapters"]


class LibraryDocument(FrozenModel):
    """One parsed file of a pack directory, with the name people know it by."""

    source: str
    category: Category
    content: Any


class TypeLibrary(FrozenModel):
    """An immutable, indexed snapshot of the type system a plan is compiled against."""

    kinds: dict[str, ArtifactKind]
    slots: dict[str, CrossStepSlot]
    domain_packs: dict[str, DomainPack]
    workflow_packs: dict[str, WorkflowPack]
    policies: dict[str, PolicyProfile]
    adapters: dict[str, Adapter]
    entities: dict[str, EntitySchema]
    entity_domain: dict[str, str]
    profiles: dict[str, ArtifactProfile]
    profile_index: dict[str, list[str]] = Field(description="'entity kind' -> profile ids")
    sources: dict[str, str] = Field(description="object id -> the file that defined it")
    overrides: list[str] = Field(default_factory=list)
    snapshot_hash: str
    skills: dict[str, SkillPackage] = Field(
        default_factory=dict, description="SKILL.md packages by id (with_skills adds them)"
    )

    def kind_for_path(self, path: str) -> ArtifactKind | None:
        """Infer a kind from a path: the longest matching extension, earliest kind on ties."""
        best: tuple[int, ArtifactKind] | None = None
        lowered = path.lower()
        for kind in self.kinds.values():
            for ext in kind.extensions:
                if lowered.endswith(ext) and (best is None or len(ext) > best[0]):
                    best = (len(ext), kind)
        return best[1] if best else None

    def kind_accepts_path(self, kind_key: str, path: str) -> bool:
        kind = self.kinds.get(kind_key)
        return kind is not None and any(path.lower().endswith(e) for e in kind.extensions)

    def canonical_profile(self, entity_id: str | None, kind_key: str) -> str | None:
        """The one canonical profile for (entity, kind), or None when there is none or several."""
        if entity_id is None:
            return None
        found = self.profile_index.get(f"{entity_id} {kind_key}", [])
        return found[0] if len(found) == 1 else None

    def adapter_between(self, from_kind: str, to_kinds: Iterable[str]) -> Adapter | None:
        """The first adapter (in the consumer's preference order) from one kind to another."""
        for to_kind in to_kinds:
            for adapter in self.adapters.values():
                if adapter.from_kind == from_kind and adapter.to_kind == to_kind:
                    return adapter
        return None


_MODELS: Mapping[Category, type[FrozenModel]] = {
    "domain": DomainPack,
    "workflow": WorkflowPack,
    "policy": PolicyProfile,
}
_LIST_KEYS: Mapping[Category, tuple[str, type[FrozenModel]]] = {
    "kinds": ("artifact_kinds", ArtifactKind),
    "slots": ("slots", CrossStepSlot),
    "adapters": ("adapters", Adapter),
    "generic": ("generic_entities", EntitySchema),
}


class _Builder:
    def __init__(self) -> None:
        self.problems: list[tuple[str, str, str]] = []
        self.items: dict[Category, dict[str, tuple[str, Any]]] = {c: {} for c in _ALL}
        self.overrides: list[str] = []

    def problem(self, source: str, field: str, message: str) -> None:
        self.problems.append((source, field, message))

    def parse(self, doc: LibraryDocument) -> None:
        if doc.category in _LIST_KEYS:
            key, model = _LIST_KEYS[doc.category]
            if not isinstance(doc.content, dict) or not isinstance(doc.content.get(key), list):
                self.problem(doc.source, key, f"expected a mapping with a list under {key!r}")
                return
            for i, raw in enumerate(doc.content[key]):
                self._add(doc, model, raw, f"{key}[{i}]")
        else:
            self._add(doc, _MODELS[doc.category], doc.content, "")

    def _add(self, doc: LibraryDocument, model: type[FrozenModel], raw: Any, prefix: str) -> None:
        try:
            obj = model.model_validate(raw)
        except ValidationError as exc:
            for err in exc.errors():
                loc = ".".join(str(x) for x in (prefix, *err["loc"]) if x != "")
                self.problem(doc.source, loc or "(document)", err["msg"])
            return
        key = _identity(obj)
        bucket = self.items[doc.category]
        if key in bucket:
            earlier = bucket[key][0]
            if _directory(earlier) == _directory(doc.source):
                self.problem(doc.source, prefix or "id", f"{key!r} is also defined in {earlier}")
                return
            self.overrides.append(f"{key} from {doc.source} overrides {earlier}")
        bucket[key] = (doc.source, obj)


_ALL: tuple[Category, ...] = (
    "kinds",
    "slots",
    "generic",
    "domain",
    "workflow",
    "policy",
    "adapters",
)


def _identity(obj: FrozenModel) -> str:
    for attr in (
        "kind_key",
        "slot_id",
        "entity_schema_id",
        "domain_pack_id",
        "workflow_pack_id",
        "policy_profile_id",
        "adapter_id",
    ):
        if hasattr(obj, attr):
            return str(getattr(obj, attr))
    raise TypeError(f"no identity field on {type(obj).__name__}")


def _directory(source: str) -> str:
    return source.rsplit("/", 2)[0] if source.count("/") >= 2 else ""


def build_library(documents: Iterable[LibraryDocument]) -> TypeLibrary:
    """Validate, cross-check and index documents; later documents override earlier ones.

    Raises:
        PackError: naming every file and field that is wrong; nothing partial is returned.
    """
    b = _Builder()
    for doc in documents:
        b.parse(doc)
    objs: dict[str, dict[str, Any]] = {c: {k: v[1] for k, v in b.items[c].items()} for c in _ALL}
    src = {k: v[0] for c in _ALL for k, v in b.items[c].items()}
    entities, entity_domain, profiles = check_library(objs, src, b.problem)
    if b.problems:
        raise PackError(b.problems)
    body = {
        "kinds": objs["kinds"],
        "slots": objs["slots"],
        "domain_packs": objs["domain"],
        "workflow_packs": objs["workflow"],
        "policies": objs["policy"],
        "adapters": objs["adapters"],
        "entities": entities,
        "entity_domain": entity_domain,
        "profiles": profiles,
    }
    snapshot = sha256_of(
        {
            k: {
                i: o.model_dump(mode="json") if isinstance(o, FrozenModel) else o
                for i, o in v.items()
            }
            for k, v in body.items()
        }
    )
    index: dict[str, list[str]] = {}
    for prof in profiles.values():
        index.setdefault(f"{prof.entity_schema_id} {prof.kind_key}", []).append(prof.profile_id)
    return TypeLibrary.model_validate(
        {
            **body,
            "profile_index": index,
            "sources": src,
            "overrides": b.overrides,
            "snapshot_hash": snapshot,
        }
    )


__all__ = ["GENERIC_SCOPE", "LibraryDocument", "TypeLibrary", "build_library", "is_generic"]


def with_skills(library: TypeLibrary, skills: Mapping[str, SkillPackage]) -> TypeLibrary:
    """The library with its skill packages; the snapshot hash covers them."""
    if not skills:
        return library
    snapshot = sha256_of(
        {"types": library.snapshot_hash, "skills": {k: v.sha256 for k, v in sorted(skills.items())}}
    )
    return library.model_copy(update={"skills": dict(skills), "snapshot_hash": snapshot})
