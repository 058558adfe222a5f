"""Builds Forge's activities from settings and runs a Temporal worker on the task queue."""

import concurrent.futures
from collections.abc import Callable
from dataclasses import dataclass

import temporalio.activity
from temporalio.client import Client
from temporalio.worker import Worker

from activities.codeact import ModelServices
from activities.compile import CompileActivities
from activities.context_packs import load_context_packs
from activities.evaluator import Evaluator
from activities.events import EventActivities
from activities.models.config import providers_from_env
from activities.models.gateway import ModelGateway
from activities.planner import PlannerActivities
from activities.recipes import RecipeActivities
from activities.recipes_fitness import library_dirs
from activities.sandbox.sweep import sweep_orphans
from activities.sandbox.workspace import prepare_workspace_root
from activities.steps.activity import StepActivities
from activities.steps.finalize import FinalizeActivities
from activities.steps.plans import CompiledPlans
from activities.steps.reuse import ReuseActivities
from activities.store.artifacts import ArtifactStore, open_artifact_store
from activities.store.events import EventStore, open_event_store
from activities.store.skills_registry import SkillRegistry, open_skill_registry
from activities.typelib import load_library, load_prices, load_profiles
from schemas import names
from workers.settings import Settings


@dataclass
class Services:
    """The long-lived clients a worker's activities hold."""

    artifacts: ArtifactStore
    events: EventStore
    skills: SkillRegistry

    @classmethod
    def from_settings(cls, settings: Settings) -> "Services":
        artifacts = open_artifact_store(
            settings.artifacts_url,
            s3_endpoint=settings.s3_endpoint,
            durable=settings.artifacts_durable,
        )
        events = open_event_store(settings.database_url)
        return cls(
            artifacts=artifacts,
            events=events,
            skills=open_skill_registry(settings.database_url, artifacts),
        )


def model_services(settings: Settings, services: Services) -> ModelServices | None:
    """The model layer, when the settings name a provider (a key or a script); else None."""
    key = settings.anthropic_api_key.get_secret_value() if settings.anthropic_api_key else None
    providers, fallback = providers_from_env(
        key, settings.model_script, settings.anthropic_base_url
    )
    if not providers and fallback is None:
        return None
    gateway = ModelGateway(
        services.events,
        services.artifacts,
        load_prices(settings.packs_path),
        providers,
        fallback=fallback,
    )
    packs = load_context_packs(settings.packs_path)
    evaluator = Evaluator(gateway, packs["evaluator"], services.events, services.artifacts)
    return ModelServices(gateway=gateway, packs=packs, evaluator=evaluator)


def activity_functions(settings: Settings, services: Services) -> list[Callable[..., object]]:
    """Every activity, bound to its class instance (built here, never inside a workflow)."""
    library = load_library(settings.packs_path)
    layers, _ = load_profiles(settings.packs_path, home=settings.home)
    models = model_services(settings, services)
    packs = models.packs if models else load_context_packs(settings.packs_path)
    compile_ = CompileActivities(
        services.artifacts,
        library,
        layers,
        gateway=models.gateway if models else None,
        packs=models.packs if models else None,
        registry=services.skills,
    )
    planner = PlannerActivities(
        services.artifacts,
        services.events,
        library,
        layers,
        gateway=models.gateway if models else None,
        packs=packs,
    )
    plans = CompiledPlans(services.artifacts)  # parsed once, for the steps and run__finalize
    steps = StepActivities(
        services.artifacts,
        services.events,
        library,
        prepare_workspace_root(settings.workspace_root),
        plans=plans,
        models=models,
        registry=services.skills,
        packs=packs,
    )
    finalize = FinalizeActivities(services.artifacts, services.events, plans)
    events = EventActivities(services.events)
    reuse = ReuseActivities(services.artifacts, services.events)
    recipes = RecipeActivities(
        library_dirs(settings.packs_path, settings.home),
        services.artifacts,
        services.events,
        skills=library.skills,
        overlay=settings.home / "recipes",
    )
    # What the first run would otherwise load: the recipe index, the compiler's first-use work.
    recipes.warm()
    compile_.warm()
    return _as_named(
        [
            recipes.match,
            recipes.plan,
            planner.plan,
            *compile_.passes(),
            steps.execute,
            finalize.finalize,
            steps.usage,
            events.append,
            reuse.reuse,
        ]
    )


def _as_named(functions: list[Callable[..., object]]) -> list[Callable[..., object]]:
    """The activities, checked against the names table (schemas/names.py).

    None missing and none new: a history names its activities, so a worker must answer to
    every one of them.
    """
    registered = {activity_definition_name(fn) for fn in functions}
    if registered != names.ACTIVITIES:
        missing = ", ".join(sorted(names.ACTIVITIES - registered)) or "none"
        unknown = ", ".join(sorted(registered - names.ACTIVITIES)) or "none"
        raise RuntimeError(
            f"the worker's activities differ from schemas/names.py (missing: {missing}; not in "
            f"the table: {unknown}): add a new activity's name to the table, never drop one"
        )
    return functions


def activity_definition_name(fn: Callable[..., object]) -> str:
    """The Temporal name an @activity.defn function is registered under."""
    # The SDK keeps the definition on the function; this is how its Worker reads it too.
    definition = temporalio.activity._Definition.must_from_callable(fn)
    assert definition.name is not None
    return definition.name


def build_worker(
    client: Client,
    settings: Settings,
    services: Services,
    activity_executor: concurrent.futures.Executor,
    *,
    max_concurrent_activities: int = 8,
) -> Worker:
    """A worker for the task queue.

    The client must be connected with ForgePlugin, which brings the workflows, the data
    converter and the sandbox runner. Sandboxes a dead worker left running are killed first.
    """
    sweep_orphans()
    return Worker(
        client,
        task_queue=settings.task_queue,
        activities=activity_functions(settings, services),
        activity_executor=activity_executor,
        max_concurrent_activities=max_concurrent_activities,
    )
