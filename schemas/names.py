"""The Temporal names Forge persists: a history recorded today names them, a worker later answers.

Workflow, activity, signal, update and query names, the task queue and the prefixes of the
event streams that are not a run's own are compatibility data, not code: renaming one strands
every run and recorded history that used it. Each is written once, here. The activity
decorators and the workflow's calls read these constants; the operations table
(workflows/operations.py) gives each activity its input and result models and its timeouts, and
ForgePlugin registers a worker's activities from that table. Add a name; never rename or drop
one while a run or a history may still use it.
"""

# Workflows.
WORKFLOW = "CompiledRunWorkflow"  # one compiled run
SCHEDULED_WORKFLOW = "ScheduledCapsuleWorkflow"  # one scheduled time of a schedule
WEBHOOK_WORKFLOW = "WebhookDelivery"  # one event delivered to one webhook

# Activities.
RECIPES_MATCH = "recipes__match"  # a run's front end: a recipe for its objective or plan
RECIPES_PLAN = "recipes__plan"  # the plan built from a matched recipe
COMPILE_PLAN = "compile__plan"  # Pass A by the planner model
COMPILE_PASSES = "compile__passes"  # passes B to E in one activity (engine 3)
# Passes B..E one by one, in this order: runs started before compile__passes compiled so.
COMPILE_RESOLVE = "compile__resolve"
COMPILE_CONTRACTS = "compile__contracts"
COMPILE_SKILLS = "compile__skills"
COMPILE_FREEZE = "compile__freeze"
CAPSULE_INSTANTIATE = "capsule__instantiate"  # a capsule run's front end: the sealed plan
SCHEDULE_PREPARE = "schedule__prepare"  # one scheduled time: claimed once, inputs resolved
STEP_EXECUTE = "step__execute"  # one attempt of one step in the sandbox
STEP_REUSE = "step__reuse"  # a resumed run adopting a verified output
STEP_USAGE = "step__usage"  # a step's recorded spend, read after a failure
RUN_FINALIZE = "run__finalize"  # the run's record and outputs at its end
EVENTS_APPEND = "events__append"  # events the workflow writes (it cannot do I/O itself)
WEBHOOK_SEND = "webhooks__send"  # one signed POST of a webhook delivery

ACTIVITIES: frozenset[str] = frozenset(
    {
        RECIPES_MATCH,
        RECIPES_PLAN,
        COMPILE_PLAN,
        COMPILE_PASSES,
        COMPILE_RESOLVE,
        COMPILE_CONTRACTS,
        COMPILE_SKILLS,
        COMPILE_FREEZE,
        CAPSULE_INSTANTIATE,
        SCHEDULE_PREPARE,
        STEP_EXECUTE,
        STEP_REUSE,
        STEP_USAGE,
        RUN_FINALIZE,
        EVENTS_APPEND,
        WEBHOOK_SEND,
    }
)

# What a person or a service sends a run: each is both a signal and an update of that name.
DECIDE_GATE = "decide_gate"
EXTEND_BUDGET = "extend_budget"
STATUS = "status"  # the run's query: its plan with per-step state

SIGNALS: frozenset[str] = frozenset({DECIDE_GATE, EXTEND_BUDGET})
UPDATES: frozenset[str] = frozenset({DECIDE_GATE, EXTEND_BUDGET})
QUERIES: frozenset[str] = frozenset({STATUS})

# The task queue a worker polls and a run is started on, unless FORGE_TASK_QUEUE says otherwise.
DEFAULT_TASK_QUEUE = "forge"

# Model work goes to a task queue of its provider, so only a worker that can serve the step's
# binding takes it: "forge@anthropic" next to "forge". Queue names are persisted like the rest.
MODEL_QUEUE_SEPARATOR = "@"
UNPREFIXED_PROVIDER = "unprefixed"  # a binding ref without "provider:": only a script serves it

# Streams that are not a run's own (schemas/event_ids.py builds every stream id from these).
GUARD_STREAM = "guard:"  # + tenant: the tenant's guard findings
WEBHOOK_STREAM = "webhooks:"  # + tenant: the tenant's delivery records, never a run's own log
CAPSULE_STREAM = "capsules:"  # + tenant + ":" + capsule name: a capsule's versions


def provider_of(binding_ref: str) -> str:
    """The provider part of a model binding ref ("anthropic:claude-sonnet-4-6" -> "anthropic")."""
    prefix, colon, _ = binding_ref.partition(":")
    return prefix if colon and prefix else UNPREFIXED_PROVIDER


def model_queue(task_queue: str, provider: str) -> str:
    """The task queue of a provider's model work on `task_queue`."""
    return f"{task_queue}{MODEL_QUEUE_SEPARATOR}{provider}"
