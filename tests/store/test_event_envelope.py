"""The stored event keeps the seed-001 envelope: hashes written before Scope still verify."""

from datetime import UTC, datetime

from activities.store.records import content_hash, draft_row, envelope, normalize
from schemas.events import Actor, EventDraft
from schemas.scope import Scope

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
ANN = Actor(id="u1", name="Ann", role="approver", kind="human")


def test_content_hashes_are_the_ones_computed_before_scope() -> None:
    # Both digests were computed by the store as it was before Scope (commit c175d8c), from
    # the same events written with flat tenant_id / project_id / actor fields.
    started = EventDraft(
        event_id="r1:run.started.v1",
        type="run.started.v1",
        scope=Scope(tenant="acme", project="billing", actor=ANN),
        run_id="r1",
        timestamp=WHEN,
        payload={"a": 1, "b": [1.5, "x"]},
    )
    assert content_hash(normalize(started)) == (
        "sha256:846772b4d2151258ed5262b7b1370c73773b0be3d883382921c1662772edbcf5"
    )
    completed = EventDraft(event_id="e2", type="step.completed.v1", caused_by="e1", timestamp=WHEN)
    assert content_hash(normalize(completed)) == (
        "sha256:c0d6d2680478f4cff7e9ddf9f8cd8314ee455cde8007064ec644653e18d16085"
    )


def test_rows_hold_the_flat_envelope_and_read_back_into_the_scope() -> None:
    draft = EventDraft(
        event_id="e1",
        type="run.started.v1",
        scope=Scope(tenant="acme", project="billing", actor=ANN),
        timestamp=WHEN,
    )
    row = draft_row(normalize(draft))
    assert (row["tenant_id"], row["project_id"], row["actor"]["id"]) == ("acme", "billing", "u1")
    assert "scope" not in row and "scope" not in envelope(draft)
    assert EventDraft.model_validate(envelope(draft)) == draft
