"""Runs with a model: the real `anthropic` SDK against the local Messages server, through Temporal.

`model_engine` starts a MessagesServer on a script and a worker whose settings point the
Anthropic provider at it (ANTHROPIC_BASE_URL), so every planner, executor and evaluator call
crosses real HTTP in the Messages API's wire format.
"""

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from temporalio.testing import WorkflowEnvironment

from activities.models.script import Script
from tests.support.messages_server import MessagesServer
from tests.workflows.engine import Engine, engine
from workers.settings import Settings

API_KEY = "sk-test-forge-local"


@asynccontextmanager
async def model_engine(
    env: WorkflowEnvironment, home: Path, task_queue: str, responses: list[dict[str, Any]]
) -> AsyncIterator[tuple[Engine, MessagesServer]]:
    # Pass B and Pass D ask their models whenever they have something to ask; a test that does
    # not script them gets "no change" (the deterministic result stands).
    fallbacks = [
        {"when": {"consumer": c}, "times": 0, "response": text(json.dumps({"steps": []}))}
        for c in ("resolver", "skill_resolver")
    ]
    script = Script.from_data({"responses": [*responses, *fallbacks]})
    with MessagesServer(script) as server:
        settings = Settings(
            home=home,
            task_queue=task_queue,
            anthropic_api_key=SecretStr(API_KEY),
            anthropic_base_url=server.base_url,
        )
        async with engine(env, home, task_queue, settings=settings) as eng:
            yield eng, server


def think(text: str = "Work out what the contract needs.") -> dict[str, Any]:
    return {"type": "thinking", "thinking": text}


def run_python(code: str, *, thinking: bool = True, tokens: int | None = None) -> dict[str, Any]:
    """An executor answer: (a thinking block and) one run_python call."""
    response: dict[str, Any] = {
        "content": [
            *([think()] if thinking else []),
            {"type": "tool_use", "name": "run_python", "input": {"code": code}},
        ]
    }
    if tokens is not None:
        response["usage"] = {"input_tokens": tokens, "output_tokens": 100}
    return response


def text(body: str, *, thinking: bool = False) -> dict[str, Any]:
    return {"content": [*([think()] if thinking else []), {"type": "text", "text": body}]}


def executor(step_key: str, response: dict[str, Any], *, times: int = 1) -> dict[str, Any]:
    return {
        "when": {"consumer": "executor", "contains": f"Step {step_key}:"},
        "times": times,
        "response": response,
    }


def verdict(criteria: list[str], result: str = "pass") -> str:
    return json.dumps(
        {
            "verdict": result,
            "summary": f"every criterion checked against the source: {result}",
            "criteria": [
                {"criterion": c, "result": result, "rationale": "checked row by row"}
                for c in criteria
            ],
        }
    )


def model_step(key: str, outputs: list[str], **fields: Any) -> dict[str, Any]:
    """A plan step with no frozen code: its executor is the model (backend sandbox.session)."""
    return {
        "step_key": key,
        "label": f"Step {key}",
        "objective": f"MUST compute {key}.",
        "expected_outputs": [{"path": p} for p in outputs],
        "success_criteria": f"{key} is written",
        "domain_pack_ids": [],
        "workflow_pack_ids": [],
        "policy_profile_id": "strict.fail-closed.v1",
        **fields,
    }
