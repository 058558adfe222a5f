"""Checks of stored events against the event catalogue, shared by the schema and engine tests."""

from collections.abc import Iterable

from pydantic import ValidationError

from schemas.event_catalogue import CATALOGUE
from schemas.events import EventDraft


def catalogue_problems(events: Iterable[EventDraft]) -> list[str]:
    """Why each event breaks the catalogue: an unknown type, or a payload its model refuses.

    Strict, as a writer is held: every key must be a field of the type's payload model.
    """
    problems = []
    for event in events:
        entry = CATALOGUE.get(event.type)
        if entry is None:
            problems.append(f"{event.event_id}: {event.type} is not in the catalogue")
            continue
        try:
            entry.payload.model_validate(event.payload)
        except ValidationError as exc:
            problems.append(f"{event.event_id} ({event.type}): {exc}")
    return problems
