"""The one-way boundary (seed 003 §3): what crosses back from the executor is plain data.

Every result and envelope model (and every model they contain) may hold only JSON-like types:
strings, numbers, booleans, None, datetimes, literals, other models, and `PlainData`
(pydantic's JsonValue) where a value is opaque. No `Any`, no `object`, no callable, no class
that is not a model, so a live client or a function cannot be smuggled back. The static walk
fails when a field is declared otherwise; the runtime checks show the types refuse a callable
and an SDK client where the data is opaque.
"""

import importlib
import inspect
import pkgutil
import types
import typing
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import anthropic
import pytest
from pydantic import BaseModel, JsonValue, ValidationError

import schemas
from schemas.base import PlainData
from schemas.budget import ToolCalled
from schemas.models import ModelResponse, ToolUseBlock
from schemas.run import StepExecuteResult

# The models that carry results and envelopes back across the executor boundary.
BOUNDARY_SUFFIXES = ("Result", "Response", "Proof", "Verdict", "Receipt", "Called", "Refusal")
BOUNDARY_NAMES = {"StepState", "ModelUsage", "Usage"}
# Not checked: Event/EventDraft. The platform writes events (payloads built from the models
# checked here), and the store keeps them only as JSON, which refuses a live object on write.
PLAIN = (str, int, float, bool, type(None), datetime)


def _models() -> Iterator[type[BaseModel]]:
    for info in pkgutil.iter_modules(schemas.__path__, "schemas."):
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseModel) and obj.__module__ == module.__name__:
                yield obj


BOUNDARY = sorted(
    {
        m
        for m in _models()
        if m.__name__.endswith(BOUNDARY_SUFFIXES) or m.__name__ in BOUNDARY_NAMES
    },
    key=lambda m: m.__name__,
)


def _problems(annotation: Any, where: str, seen: set[type]) -> list[str]:
    if annotation is JsonValue or annotation is PlainData:
        return []
    if annotation is Any or annotation is object:
        return [f"{where}: Any/object can carry a live object; use PlainData"]
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _problems(typing.get_args(annotation)[0], where, seen)
    if origin is typing.Literal:
        return []
    if origin is Callable or annotation is Callable:
        return [f"{where}: a callable"]
    if origin in (list, tuple, set, frozenset, dict, typing.Union, types.UnionType):
        args = typing.get_args(annotation)
        return [p for a in args if a is not Ellipsis for p in _problems(a, where, seen)]
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            if annotation in seen:
                return []
            seen.add(annotation)
            return [
                p
                for name, f in annotation.model_fields.items()
                for p in _problems(f.annotation, f"{annotation.__name__}.{name}", seen)
            ]
        if issubclass(annotation, PLAIN):
            return []
    return [f"{where}: {annotation!r} is not plain data"]


def test_the_boundary_models_are_found() -> None:
    names = {m.__name__ for m in BOUNDARY}
    assert {"StepExecuteResult", "RunResult", "ModelResponse", "EvaluationProof"} <= names
    assert {"ModelCallResult", "Receipt", "ModelCalled", "ToolCalled", "StepState"} <= names


@pytest.mark.parametrize("model", BOUNDARY, ids=lambda m: m.__name__)
def test_a_boundary_model_holds_only_plain_data(model: type[BaseModel]) -> None:
    assert _problems(model, model.__name__, set()) == []


def test_the_walk_catches_what_it_must() -> None:
    class Smuggler(BaseModel):
        callback: Callable[[], None]
        anything: dict[str, Any]
        client: anthropic.Anthropic | None = None

        model_config = {"arbitrary_types_allowed": True}

    found = _problems(Smuggler, "Smuggler", set())
    assert len(found) == 3


CLIENT = anthropic.Anthropic(api_key="sk-never-used", max_retries=0)


@pytest.mark.parametrize("live", [lambda: 1, CLIENT, print], ids=["lambda", "client", "builtin"])
def test_opaque_fields_refuse_live_objects(live: Any) -> None:
    with pytest.raises(ValidationError):
        StepExecuteResult(
            step_key="a",
            attempt=1,
            outputs=[],
            receipt_summary={"output/a.json": {"smuggled": live}},
            completed_event_id="e",
        )
    with pytest.raises(ValidationError):
        ToolUseBlock(id="t1", name="run_python", input={"code": live})
    with pytest.raises(ValidationError):
        ToolCalled(tool="sandbox.session", channel="executor", detail={"x": [live]})
    with pytest.raises(ValidationError):
        ModelResponse.model_validate(
            {
                "model": "m",
                "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {"f": live}}],
                "stop_reason": "tool_use",
                "usage": {},
            }
        )
