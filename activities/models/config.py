"""Which model providers a process has, from the settings workers/ reads from the environment.

The environment names (read by workers/settings, passed in here):
ANTHROPIC_API_KEY (the Anthropic provider), ANTHROPIC_BASE_URL (another Messages API endpoint,
e.g. a proxy or the local test server), FORGE_MODEL_SCRIPT (a model script file, see
activities/models/script.py, that answers every binding no real provider claims).
"""

from __future__ import annotations

from pathlib import Path

from activities.models.anthropic import AnthropicProvider
from activities.models.base import Provider
from activities.models.script import Script
from activities.models.scripted import ScriptedProvider

__all__ = ["ENV_API_KEY", "ENV_BASE_URL", "ENV_MODEL_SCRIPT", "providers_from_env"]

ENV_API_KEY = "ANTHROPIC_API_KEY"
ENV_BASE_URL = "ANTHROPIC_BASE_URL"
ENV_MODEL_SCRIPT = "FORGE_MODEL_SCRIPT"


def providers_from_env(
    api_key: str | None, script_path: Path | None, base_url: str | None
) -> tuple[dict[str, Provider], Provider | None]:
    """The providers by binding-ref prefix, and the fallback for every other ref.

    An API key gives {"anthropic": AnthropicProvider}; a script gives a ScriptedProvider as the
    fallback (with a key too, it answers only the refs Anthropic does not claim); neither gives
    no provider at all, and the gateway refuses each call with MODEL_UNAVAILABLE.

    Raises:
        ForgeError: MODEL_SCRIPT_INVALID, the script file is missing or malformed (named with
            the entry).
    """
    providers: dict[str, Provider] = {}
    if api_key:
        providers["anthropic"] = AnthropicProvider(api_key, base_url=base_url or None)
    fallback = ScriptedProvider(Script.load(script_path)) if script_path is not None else None
    return providers, fallback
