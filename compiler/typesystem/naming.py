"""Naming conventions of seed 000 §4.4, checked when the library is built."""

import re

_SEG = r"[a-z][a-z0-9_]*"
KIND_KEY = re.compile(rf"^{_SEG}\.{_SEG}(\.{_SEG})?$")
ENTITY_ID = re.compile(rf"^{_SEG}\.{_SEG}$")
PACK_ID = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
POLICY_ID = re.compile(r"^[a-z][a-z0-9]*\.[a-z0-9-]+\.v[0-9]+$")
SLOT_ID = re.compile(rf"^{_SEG}$")
ADAPTER_ID = re.compile(r"^adapt\.[a-z0-9_.-]+$")


def profile_id_problem(profile_id: str, kind_key: str) -> str | None:
    """Check `<scope>.<kind_key>.<semantic_name>.v<major>`; return what is wrong, if anything."""
    match = re.fullmatch(rf"({_SEG})\.(.+)\.({_SEG})\.v([0-9]+)", profile_id)
    if match is None:
        return (
            f"profile_id {profile_id!r} must be <scope>.<kind_key>.<semantic_name>.v<major>, "
            "e.g. billing.table.json_rows.time_entries.v1"
        )
    if match.group(2) != kind_key:
        return f"profile_id {profile_id!r} embeds kind {match.group(2)!r} but declares {kind_key!r}"
    return None


def kind_key_problem(kind_key: str) -> str | None:
    if KIND_KEY.match(kind_key) is None:
        return f"kind_key {kind_key!r} must be <family>.<representation>[.<subtype>]"
    return None


def entity_id_problem(entity_id: str) -> str | None:
    if ENTITY_ID.match(entity_id) is None:
        return f"entity_schema_id {entity_id!r} must be <domain>.<entity>, e.g. billing.time_entry"
    return None
