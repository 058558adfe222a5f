"""The one catalogue of Forge's failure codes: retryable, category, meaning and what to do.

Every ErrorCode has exactly one entry (a test holds this, and that docs/errors.md lists each).
"""

from schemas.error_catalogue_platform import PLATFORM_CODES
from schemas.error_catalogue_steps import STEP_CODES
from schemas.error_codes import CodeInfo as I
from schemas.error_codes import ErrorCode as C

_OTHER_CODES: dict[C, I] = {
    C.COMPILER_ERROR: I(
        False,
        "plan",
        "The compiler rejected the plan; the failure's details list every diagnostic (E_* codes).",
        "Fix every diagnostic listed (`forge compile PLAN.json` shows them as a table) and "
        "submit again.",
    ),
    C.PACK_INVALID: I(
        False,
        "plan",
        "A type-library document (pack, kind, slot, profile, adapter) is invalid.",
        "Fix the file and field named; `forge packs check DIR` checks a pack directory.",
    ),
    C.TEMPLATE_INVALID: I(
        False,
        "plan",
        "A JSON Schema, imprinting template, filled template or payload cannot be used (see the"
        " template reasons).",
        "Fix the value at the JSON path named, as the message says.",
    ),
    C.PLAN_FILE_INVALID: I(
        False,
        "plan",
        "A plan file cannot be loaded (missing code_file, wrong shape).",
        "Fix the file and field named; a plan is one JSON object in the forge.plan/1 schema.",
    ),
    C.PLAN_REJECTED: I(
        False,
        "plan",
        "The planner model's plan was still rejected after the allowed repairs.",
        "Reword the objective, or write the plan and start it with `forge run PLAN.json`.",
    ),
    C.PLANNER_UNAVAILABLE: I(
        False,
        "plan",
        "The objective needs the planner model and none is configured or bound.",
        "Set ANTHROPIC_API_KEY (or FORGE_MODEL_SCRIPT) and restart the worker, or start the run"
        " with a plan.",
    ),
    C.POINTER_INVALID: I(
        False,
        "plan",
        "A JSON pointer in a validation rule is malformed or leads to no value.",
        "Fix the pointer in the profile's validation rule (RFC 6901: `/field/0`).",
    ),
    C.SIMILARITY_BACKEND: I(
        True,
        "plan",
        "A similarity backend answered with something unusable (wrong count, bad vectors).",
        "Retried; if it persists, check the backend or turn the similarity matcher off in the "
        "profile.",
    ),
    C.RECIPE_INVALID: I(
        False,
        "recipe",
        "A recipe document or one of its directive lines does not parse.",
        "Fix the line named (`forge recipes check DIR` lists every problem).",
    ),
    C.RECIPE_AUTHOR_REFUSED: I(
        False,
        "recipe",
        "An authored recipe was not written; every reason is listed.",
        "Fix each problem listed and author it again.",
    ),
    C.RECIPE_IMPORT_REFUSED: I(
        False,
        "recipe",
        "A SKILL.md cannot become a recipe; nothing was written.",
        "Fix the SKILL.md as the message says, or write the recipe by hand.",
    ),
    C.RECIPE_NOT_FOUND: I(
        False,
        "recipe",
        "A `uses:` step names a recipe that is not in the library.",
        "Add the recipe to a recipe directory, or fix the slug in `uses:`.",
    ),
    C.RECURSION_GUARD: I(
        False,
        "recipe",
        "A `uses:` call would re-enter a recipe on the stack or nest too deep.",
        "Break the cycle, or flatten the recipes so the chain is shallower.",
    ),
    C.SUB_RECIPE_FAILED: I(
        False,
        "recipe",
        "The child run of a `uses:` step did not complete.",
        "Look at the child run (`forge status CHILD_RUN`) and fix what failed there.",
    ),
    C.CONTEXT_UNKNOWN_INTENT: I(
        False,
        "context",
        "A context compile asked for an intent no context pack declares.",
        "Use an intent a pack declares, or add a pack for it.",
    ),
    C.CONTEXT_BAD_SPLIT: I(
        False,
        "context",
        "A context pack's token budget split does not add up.",
        "Fix the pack's budget split so its shares sum to at most 1.",
    ),
    C.CONTEXT_POLICY_RULE: I(
        False,
        "context",
        "A context pack's policy rule cannot be applied.",
        "Fix the rule named in the pack.",
    ),
    C.CONTEXT_PACK_INVALID: I(
        False,
        "context",
        "A context pack document is invalid or missing.",
        "Fix the pack file named (field and reason are in the message).",
    ),
    C.MODEL_RATE_LIMITED: I(
        True,
        "model",
        "The provider refused the call for its rate limit (429).",
        "Retried with backoff; if it persists, lower concurrency or raise the account's limits.",
    ),
    C.MODEL_OVERLOADED: I(
        True,
        "model",
        "The provider is overloaded (529).",
        "Retried with backoff; nothing to do unless it persists.",
    ),
    C.MODEL_SERVER_ERROR: I(
        True,
        "model",
        "The provider failed (5xx).",
        "Retried with backoff; check the provider's status page if it persists.",
    ),
    C.MODEL_TIMEOUT: I(
        True,
        "model",
        "No answer within the binding's timeout.",
        "Retried; raise the binding's timeout if large prompts need longer.",
    ),
    C.MODEL_CONNECTION: I(
        True,
        "model",
        "The provider could not be reached.",
        "Retried; check the network, proxy and ANTHROPIC_BASE_URL.",
    ),
    C.MODEL_BAD_RESPONSE: I(
        True,
        "model",
        "The answer is not a usable Messages response.",
        "Retried; if it persists, report it with the prompt hash.",
    ),
    C.MODEL_REQUEST_INVALID: I(
        False,
        "model",
        "The request itself is wrong (400/404/413/422): model name, size or shape.",
        "Fix the binding (model name, max tokens) or shrink the prompt; a retry cannot help.",
    ),
    C.MODEL_AUTH: I(
        False,
        "model",
        "The key was refused (401/403).",
        "Check ANTHROPIC_API_KEY and the account's access to the model; restart the worker.",
    ),
    C.MODEL_UNAVAILABLE: I(
        False,
        "model",
        "No provider is configured for the binding.",
        "Set ANTHROPIC_API_KEY or FORGE_MODEL_SCRIPT and restart the worker.",
    ),
    C.MODEL_SCRIPT_INVALID: I(
        False,
        "model",
        "The FORGE_MODEL_SCRIPT file cannot be read or does not follow the script format.",
        "Fix the script file at the entry named.",
    ),
    C.MODEL_SCRIPT_UNMATCHED: I(
        False,
        "model",
        "No entry of the model script (with uses left) answers a request.",
        "Add an entry matching the request (its prompt hash is in the message) to the script.",
    ),
    C.PROMPT_NOT_FOUND: I(
        False,
        "model",
        "No prompt is stored under a prompt hash.",
        "Check the hash; prompts are kept with the run's artifacts.",
    ),
    C.MODEL_LEDGER_REPLAY: I(
        False,
        "model",
        "A recorded model call cannot be replayed: its stored response is missing or unreadable.",
        "Restore the artifact store, or start a new run instead of resuming this one.",
    ),
    C.GATE_REJECTED: I(
        False,
        "run",
        "A person rejected the gated step.",
        "Read the decision's comment; change the plan and start a new run.",
    ),
    C.GATE_CHANGES_REQUESTED: I(
        False,
        "run",
        "A person asked for changes at the gated step.",
        "Make the requested changes and start a new run.",
    ),
    C.DECISION_REFUSED: I(
        False,
        "run",
        "A gate decision does not apply (no such gate, not waiting, wrong contract hash or role).",
        "Check `forge gates RUN` for the gates waiting and decide one of those.",
    ),
    C.RUN_ENDED: I(
        False,
        "run",
        "A request for a running run reached one that has already ended.",
        "Read how it ended (`forge status RUN`, GET /v1/runs/RUN); nothing was changed.",
    ),
    C.WORKER_UNAVAILABLE: I(
        True,
        "run",
        "No worker answered a running run in time (none polls its task queue): a query went "
        "unanswered, or a decision was not taken; nothing was decided or changed.",
        "Start a worker for the run's task queue (`forge worker`, FORGE_TASK_QUEUE) and send "
        "the same request again (HTTP: after Retry-After).",
    ),
    C.EXTENSION_REFUSED: I(
        False,
        "run",
        "A budget extension does not apply (run finished, caps not raised).",
        "Send caps higher than the current ones to a running run.",
    ),
    C.INVALID_INPUT: I(
        True,
        "run",
        "A payload failed validation (an update or signal sent by hand, a corrupt stored "
        "document).",
        "Fix the fields named; `forge schemas export` writes each payload's schema.",
    ),
    C.CAPSULE_NOT_FOUND: I(
        False,
        "capsule",
        "The tenant has no capsule of that name, or not that version.",
        "See `forge capsule list` and `forge capsule versions NAME`; names are NAME or NAME@V.",
    ),
    C.CAPSULE_REFUSED: I(
        False,
        "capsule",
        "A run cannot become a capsule (it did not complete, a step's outputs were not verified, "
        "a receipt shows undeclared writes) or a capsule option does not apply.",
        "Fix what the message names; extract from a run that completed with every step verified.",
    ),
    C.CAPSULE_TAMPERED: I(
        False,
        "capsule",
        "A capsule's content, plan or code no longer matches the hash it was sealed with.",
        "Do not run it: export the capsule again from the installation that made it.",
    ),
    C.PARAMETER_INVALID: I(
        False,
        "capsule",
        "A run parameter or input is missing, unknown, of the wrong type or shape.",
        "Give the parameter the message names in the form it expects (`forge capsule show`).",
    ),
    C.INPUT_LOCATION_REFUSED: I(
        False,
        "capsule",
        "An input location the run's tenant may not read (a path outside its input roots, an "
        "S3 object outside its buckets and prefixes, another scheme).",
        "Put the file where the tenant reads (`forge tenants show TENANT`), or have an admin "
        "add the location with `forge tenants update TENANT --add-input-root/--add-input-bucket`.",
        "Upload the file (POST /v1/uploads) and name the upload, or have the operator add the "
        "location to the tenant's input roots or buckets.",
    ),
    C.SCHEDULE_INVALID: I(
        False,
        "capsule",
        "A schedule option cannot be used: a cron expression, time zone, interval, overlap "
        "policy, input template or time range.",
        "Fix the option the message names (`forge schedule create --help` lists the forms).",
        "Fix the field the message names (its form is in /openapi.json and docs/api.md).",
    ),
    C.SCHEDULE_NOT_FOUND: I(
        False,
        "capsule",
        "The tenant has no schedule of that name.",
        "See `forge schedule list`.",
    ),
    C.WEBHOOK_REFUSED: I(
        False,
        "tool",
        "A webhook's receiver refused a delivery (a 4xx other than 408 or 429): no retry.",
        "Fix the receiver (its URL, its signature check); the next events are delivered anew.",
    ),
    C.WEBHOOK_UNAVAILABLE: I(
        True,
        "tool",
        "A webhook's receiver failed a delivery (5xx, 408 or 429): Temporal retries it.",
        "Check the receiver; the delivery is retried with backoff until its attempts run out.",
    ),
}

_ENTRIES = {**_OTHER_CODES, **STEP_CODES, **PLATFORM_CODES}
# In the enum's order, as `forge errors` and docs/errors.md list them.
CATALOGUE: dict[C, I] = {code: _ENTRIES[code] for code in C if code in _ENTRIES}


def info(code: C) -> I:
    """The catalogue entry of a code."""
    return CATALOGUE[code]
