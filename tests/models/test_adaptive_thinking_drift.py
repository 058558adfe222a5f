"""Forge's list of adaptive-thinking models against the installed `anthropic` SDK's own view.

The SDK keeps its view private (a module-level list it warns from). Forge states its own in
`activities.models.anthropic` and never imports the SDK's; these tests tell when the two differ:
by what the SDK does (it warns when a listed model is sent `thinking.type: enabled`, through its
public `messages.create`), and by reading the list's literal wherever in the package it now lives,
so a renamed module changes nothing here.
"""

import ast
import contextlib
import warnings
from pathlib import Path

import anthropic
import pytest

from activities.models.anthropic import (
    ADAPTIVE_THINKING_FAMILIES,
    ADAPTIVE_THINKING_MODELS,
    adaptive_thinking,
)
from activities.models.script import Script
from tests.support.messages_server import MessagesServer

_SDK_LIST_NAME = "MODELS_TO_WARN_WITH_THINKING_ENABLED"
# Models Forge sends a fixed thinking budget: the SDK must not warn for them either.
_BUDGET_MODELS = ("claude-sonnet-4-6", "claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5")


def _sdk_listed_models() -> set[str]:
    """Every string in a literal assigned to the SDK's list name, in any module of the package."""
    found: set[str] = set()
    for path in Path(anthropic.__file__).parent.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if _SDK_LIST_NAME not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            target = node.target if isinstance(node, ast.AnnAssign) else None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
            value = getattr(node, "value", None)
            if isinstance(target, ast.Name) and target.id == _SDK_LIST_NAME and value is not None:
                found |= {
                    c.value
                    for c in ast.walk(value)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                }
    return found


def _sdk_warns(client: anthropic.Anthropic, model: str) -> bool:
    """Whether the SDK's public messages.create warns that a fixed budget is deprecated."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # Only the SDK's warning matters here, not what the local server answers.
        with contextlib.suppress(anthropic.APIError):
            client.messages.create(
                model=model,
                max_tokens=2048,
                thinking={"type": "enabled", "budget_tokens": 1024},
                messages=[{"role": "user", "content": "hi"}],
            )
    return any("thinking" in str(w.message) for w in caught)


@pytest.fixture(scope="module")
def sdk_client():
    script = Script.from_data(
        {"responses": [{"response": {"content": [{"type": "text", "text": "ok"}]}, "times": 100}]}
    )
    with MessagesServer(script) as server:
        client = anthropic.Anthropic(api_key="test-key", base_url=server.base_url, max_retries=0)
        try:
            yield client
        finally:
            client.close()


def test_the_sdk_warns_for_exactly_the_models_forge_names(sdk_client) -> None:
    listed = _sdk_listed_models()
    candidates = sorted(ADAPTIVE_THINKING_MODELS | listed | set(_BUDGET_MODELS))
    sdk_view = {m for m in candidates if _sdk_warns(sdk_client, m)}
    forge_view = {m for m in candidates if adaptive_thinking(m)}
    missing = sdk_view - forge_view
    assert not missing, (
        f"the anthropic SDK {anthropic.__version__} deprecates a fixed thinking budget for "
        f"{sorted(missing)}, which Forge would send one: add them to ADAPTIVE_THINKING_MODELS"
    )
    stale = {m for m in ADAPTIVE_THINKING_MODELS if m not in sdk_view}
    assert not stale, (
        f"Forge names {sorted(stale)} as adaptive-thinking models but the anthropic SDK "
        f"{anthropic.__version__} no longer warns for them: check the API's model notes and "
        "update ADAPTIVE_THINKING_MODELS"
    )
    assert not sdk_view & set(_BUDGET_MODELS)


def test_the_sdk_list_found_by_reading_the_package_agrees_when_present() -> None:
    listed = _sdk_listed_models()
    if not listed:
        pytest.skip(
            f"anthropic {anthropic.__version__} no longer holds a literal {_SDK_LIST_NAME}; "
            "the behavioural test above still compares the two views"
        )
    assert {m for m in listed if not ADAPTIVE_THINKING_FAMILIES.match(m)} == set(
        ADAPTIVE_THINKING_MODELS
    )
