"""The Temporal names Forge persists: a history recorded today names them, a worker later answers.

Activity, workflow, signal, update and query names are compatibility data, not code: renaming
one strands every run and recorded history that used it. They live in this one table; the
worker refuses to start when the activities it registers differ from it, and a test holds the
workflow's handlers and the names its code schedules to it. Add a name; never rename or drop
one while a run or a history may still use it.
"""

WORKFLOW = "CompiledRunWorkflow"
CAPSULE_INSTANTIATE = "capsule__instantiate"
SCHEDULED_WORKFLOW = "ScheduledCapsuleWorkflow"  # one scheduled time of a schedule
SCHEDULE_PREPARE = "schedule__prepare"
WEBHOOK_WORKFLOW = "WebhookDelivery"  # one event delivered to one webhook
WEBHOOK_SEND = "webhooks__send"
EVENTS_APPEND = "events__append"

ACTIVITIES: frozenset[str] = frozenset(
    {
        "recipes__match",  # a run's front end: a recipe for its objective or plan
        "recipes__plan",  # the plan built from a matched recipe
        "compile__plan",  # Pass A by the planner model
        "compile__passes",  # passes B to E in one activity (engine 3)
        "compile__resolve",  # passes B..E one by one: runs started before compile__passes
        "compile__contracts",
        "compile__skills",
        "compile__freeze",
        "capsule__instantiate",  # a capsule run's front end: the sealed plan, re-verified
        "schedule__prepare",  # one scheduled time: claimed once, inputs resolved, a capsule run
        "step__execute",  # one attempt of one step in the sandbox
        "step__reuse",  # a resumed run adopting a verified output
        "step__usage",  # a step's recorded spend, read after a failure
        "run__finalize",  # the run's record and outputs at its end
        "events__append",  # events the workflow writes (it cannot do I/O itself)
        "webhooks__send",  # one signed POST of a webhook delivery
    }
)

SIGNALS: frozenset[str] = frozenset({"decide_gate", "extend_budget"})
UPDATES: frozenset[str] = frozenset({"decide_gate", "extend_budget"})
QUERIES: frozenset[str] = frozenset({"status"})

# Model work goes to a task queue of its provider, so only a worker that can serve the step's
# binding takes it: "forge@anthropic" next to "forge". Queue names are persisted like the rest.
MODEL_QUEUE_SEPARATOR = "@"
UNPREFIXED_PROVIDER = "unprefixed"  # a binding ref without "provider:": only a script serves it


def provider_of(binding_ref: str) -> str:
    """The provider part of a model binding ref ("anthropic:claude-sonnet-4-6" -> "anthropic")."""
    prefix, colon, _ = binding_ref.partition(":")
    return prefix if colon and prefix else UNPREFIXED_PROVIDER


def model_queue(task_queue: str, provider: str) -> str:
    """The task queue of a provider's model work on `task_queue`."""
    return f"{task_queue}{MODEL_QUEUE_SEPARATOR}{provider}"
