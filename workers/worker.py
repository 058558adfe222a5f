"""Builds Forge's activities from settings and runs a Temporal worker on the task queue."""

import concurrent.futures
from collections.abc import Callable
from dataclasses import dataclass

from temporalio.client import Client
from temporalio.worker import Worker

from activities.compile import CompileActivities
from activities.events import EventActivities
from activities.recipes import RecipeActivities
from activities.recipes_fitness import library_dirs
from activities.steps import ReuseActivities, StepActivities
from activities.store.artifacts import ArtifactStore, open_artifact_store
from activities.store.events import EventStore, open_event_store
from activities.typelib import load_library, load_profiles
from workers.settings import Settings


@dataclass
class Services:
    """The long-lived clients a worker's activities hold."""

    artifacts: ArtifactStore
    events: EventStore

    @classmethod
    def from_settings(cls, settings: Settings) -> "Services":
        return cls(
            artifacts=open_artifact_store(settings.artifacts_url, s3_endpoint=settings.s3_endpoint),
            events=open_event_store(settings.database_url),
        )


def activity_functions(settings: Settings, services: Services) -> list[Callable[..., object]]:
    """Every activity, bound to its class instance (built here, never inside a workflow)."""
    library = load_library(settings.packs_path)
    layers, _ = load_profiles(settings.packs_path, home=settings.home)
    compile_ = CompileActivities(services.artifacts, library, layers)
    steps = StepActivities(services.artifacts, services.events, library, settings.home / "runs")
    events = EventActivities(services.events)
    reuse = ReuseActivities(services.artifacts, services.events)
    recipes = RecipeActivities(
        library_dirs(settings.packs_path, settings.home),
        services.artifacts,
        services.events,
        skills=library.skills,
        overlay=settings.home / "recipes",
    )
    return [
        recipes.match,
        recipes.plan,
        compile_.resolve,
        compile_.contracts,
        compile_.skills,
        compile_.freeze,
        steps.execute,
        steps.finalize,
        steps.usage,
        events.append,
        reuse.reuse,
    ]


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
    converter and the sandbox runner.
    """
    return Worker(
        client,
        task_queue=settings.task_queue,
        activities=activity_functions(settings, services),
        activity_executor=activity_executor,
        max_concurrent_activities=max_concurrent_activities,
    )
