"""Builds Forge's activities from settings and runs a Temporal worker on the task queue."""

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from temporalio.client import Client
from temporalio.worker import Worker

from activities.capsules.instantiate import CapsuleActivities
from activities.compile.passes import CompileActivities
from activities.compile.planner import PlannerActivities
from activities.compile.typelib import load_library, load_prices, load_profiles
from activities.events import EventActivities
from activities.harness.codeact_session import ModelServices
from activities.harness.evaluator import Evaluator
from activities.models.config import providers_from_env
from activities.models.context_packs import load_context_packs
from activities.models.gateway import ModelGateway
from activities.net.outbound import OutboundClient
from activities.recipes.fitness import library_dirs
from activities.recipes.match import RecipeActivities
from activities.sandbox.sweep import sweep_orphans
from activities.sandbox.workspace import prepare_workspace_root
from activities.schedules.prepare import ScheduleActivities
from activities.steps.activity import StepActivities
from activities.steps.finalize import FinalizeActivities
from activities.steps.plans import CompiledPlans
from activities.steps.reuse import ReuseActivities
from activities.store.admissions import AdmissionStore, open_admissions
from activities.store.artifacts import ArtifactStore, open_artifact_store
from activities.store.capsules import CapsuleStore, open_capsule_store
from activities.store.events import EventStore, open_event_store
from activities.store.schedule_claims import ScheduleClaims, open_schedule_claims
from activities.store.skills_registry import SkillRegistry, open_skill_registry
from activities.store.tenant_settings import TenantSettingsStore, open_tenant_settings
from activities.store.webhooks import WebhookStore, open_webhook_store
from activities.webhooks.send import WebhookActivities
from compiler.ladder.secrets.mask import mask_text
from compiler.plan.context import ProfileLayers
from schemas import names
from workers.plugin import activities_of
from workers.process import activity_log, logmask
from workers.process.concurrency import worker_options
from workers.process.guard_recorder import recording
from workers.process.versioning import deployment_config
from workers.process.webhook_dispatch import dispatching
from workers.services import quotas
from workers.services.capsule_runs import input_policy
from workers.services.webhook_keys import server_signing_key
from workers.settings import Settings


@dataclass
class Services:
    """The long-lived clients a worker's activities hold."""

    artifacts: ArtifactStore
    events: EventStore
    skills: SkillRegistry
    capsules: CapsuleStore
    claims: ScheduleClaims
    webhooks: WebhookStore
    tenant_settings: TenantSettingsStore
    admissions: AdmissionStore

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
            capsules=open_capsule_store(settings.database_url, artifacts),
            claims=open_schedule_claims(settings.database_url),
            webhooks=open_webhook_store(settings.database_url),
            tenant_settings=open_tenant_settings(settings.database_url),
            admissions=open_admissions(settings.database_url),
        )

    def close(self) -> None:
        """Release every store's pooled connections."""
        for store in (
            self.events,
            self.skills,
            self.capsules,
            self.claims,
            self.webhooks,
            self.tenant_settings,
            self.admissions,
        ):
            store.close()


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
        record_content=settings.telemetry_content == "masked",
    )
    packs = load_context_packs(settings.packs_path)
    evaluator = Evaluator(gateway, packs["evaluator"], services.events, services.artifacts)
    return ModelServices(gateway=gateway, packs=packs, evaluator=evaluator)


@dataclass(frozen=True)
class WorkerPlan:
    """What a worker process registers, and the model queues it may poll."""

    activities: list[Callable[..., object]]
    providers: frozenset[str]  # the model providers this process serves (names.model_queue)


def activity_functions(settings: Settings, services: Services) -> list[Callable[..., object]]:
    """Every activity, bound to its class instance (built here, never inside a workflow)."""
    return worker_plan(settings, services).activities


def worker_plan(settings: Settings, services: Services) -> WorkerPlan:
    """The activities, bound to their class instances, and the providers this process serves."""
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
    # One outbound client for the bridge's http.request and the webhooks: building one loads
    # the system's trust store into a TLS context.
    outbound = OutboundClient()
    steps = StepActivities(
        services.artifacts,
        services.events,
        library,
        prepare_workspace_root(settings.workspace_root),
        plans=plans,
        models=models,
        registry=services.skills,
        packs=packs,
        outbound=outbound,
        runtime_root=settings.step_runtime,
    )
    finalize = FinalizeActivities(services.artifacts, services.events, plans)
    events = EventActivities(services.events)
    reuse = ReuseActivities(services.artifacts, services.events)
    capsules = CapsuleActivities(services.artifacts, services.capsules)
    scheduled = ScheduleActivities(
        services.artifacts,
        services.capsules,
        services.claims,
        lambda tenant: input_policy(settings, services.tenant_settings.get(tenant)),
        services.admissions,
        quotas.reconcile,
    )
    webhooks = WebhookActivities(outbound, settings.webhook_allow_ips, server_signing_key(settings))
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
    # ForgePlugin registers these from the operations table when a Worker starts.
    activities = activities_of(
        recipes, planner, compile_, steps, finalize, events, reuse, capsules, scheduled, webhooks
    )
    served = models.gateway.providers_served(known_providers(layers)) if models else frozenset()
    return WorkerPlan(activities, served)


def known_providers(layers: ProfileLayers) -> set[str]:
    """Every provider a profile or the price table names: what a model script stands in for."""
    refs = set(layers.prices.models)
    for profile in (*layers.builtin.values(), *layers.workspace.values()):
        refs |= {b.model_binding_ref for b in profile.executor_by_backend.values()}
        refs |= {b.model_binding_ref for b in profile.planner_phase_bindings.values()}
    return {names.provider_of(ref) for ref in refs}


class ForgeWorker:
    """The worker of the run's task queue and, beside it, one per model queue it serves.

    A model step is scheduled on its provider's queue (schemas/names.model_queue), so a worker
    without that model never takes it: the step waits for one that has it. Each model queue's
    worker has a thread pool of its own (`pools`, shut down on exit): an activity a Worker
    accepted always has a thread, so none waits for one past its heartbeat timeout.
    """

    def __init__(
        self,
        workers: list[Worker],
        providers: frozenset[str],
        pools: list[concurrent.futures.ThreadPoolExecutor] | None = None,
        events: EventStore | None = None,
        dispatch: Callable[[], contextlib.AbstractAsyncContextManager[None]] | None = None,
    ) -> None:
        self.workers = workers
        self.providers = providers  # whose model queues it polls
        self._events = events  # where maskings in its logs and failures are recorded
        self._dispatch = dispatch  # turns the tenants' new events into webhook deliveries
        self._pools = pools or []
        self._stack = contextlib.AsyncExitStack()

    @property
    def task_queues(self) -> list[str]:
        return [w.task_queue for w in self.workers]

    async def __aenter__(self) -> "ForgeWorker":
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(self._recording())  # left last: records all
            for worker in self.workers:
                await stack.enter_async_context(worker)
            await stack.enter_async_context(self._dispatching())
            self._stack = stack.pop_all()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            await self._stack.aclose()
        finally:
            self._shutdown_pools()

    async def run(self) -> None:
        """Poll every queue until cancelled (Ctrl-C)."""
        try:
            async with self._recording(), self._dispatching():
                await asyncio.gather(*(worker.run() for worker in self.workers))
        finally:
            self._shutdown_pools()

    def _recording(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Maskings in this process's logs and failures, recorded as guard events meanwhile."""
        return recording(self._events) if self._events else contextlib.nullcontext()

    def _dispatching(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Webhook deliveries started for the tenants' new events meanwhile."""
        return self._dispatch() if self._dispatch else contextlib.nullcontext()

    def _shutdown_pools(self) -> None:
        for pool in self._pools:
            pool.shutdown(wait=False, cancel_futures=True)


def build_worker(
    client: Client,
    settings: Settings,
    services: Services,
    activity_executor: concurrent.futures.Executor,
) -> ForgeWorker:
    """The workers for the task queue and for each model queue this process can serve.

    The client must be connected with ForgePlugin, which brings the workflows, the data
    converter and the sandbox runner. Sandboxes a dead worker left running are killed first.
    Each queue's Worker takes its slots and pollers from the settings (concurrency.py); the
    caller's activity_executor needs a thread per activity slot (settings.worker_activity_slots).
    """
    sweep_orphans()
    logmask.install()  # credentials masked in every log record of this process
    activity_log.install()  # an expected activity failure logs one line, no traceback
    mask_text("warm up")  # compile the credential rules now, not in a workflow task
    plan = worker_plan(settings, services)
    model_queues = [
        names.model_queue(settings.task_queue, provider) for provider in sorted(plan.providers)
    ]
    pools = [
        concurrent.futures.ThreadPoolExecutor(
            max_workers=settings.worker_activity_slots, thread_name_prefix=queue
        )
        for queue in model_queues
    ]
    executors = [activity_executor, *pools]
    # Every queue's Worker is the same version: a pinned run's activities, on the model
    # queues too, go to workers of the version the run is pinned to.
    deployment = deployment_config(settings)
    return ForgeWorker(
        [
            Worker(
                client,
                task_queue=queue,
                activities=plan.activities,
                activity_executor=executor,
                deployment_config=deployment,
                **worker_options(settings),
            )
            for queue, executor in zip([settings.task_queue, *model_queues], executors, strict=True)
        ],
        plan.providers,
        pools,
        services.events,
        lambda: dispatching(client, settings, services.webhooks, services.events),
    )
