"""The one catalogue of Forge's failure codes: retryable, category, meaning and what to do.

Every ErrorCode has exactly one entry (a test holds this, and that docs/errors.md lists each).
"""

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
    C.STORE_ERROR: I(
        False,
        "store",
        "A store operation failed.",
        "Read the message; check the database and artifact store.",
    ),
    C.STORE_CONCURRENCY: I(
        True,
        "store",
        "A stream moved on since the caller read it (optimistic concurrency).",
        "Retried: re-read the stream and decide again.",
    ),
    C.STORE_CONFLICT: I(
        False,
        "store",
        "An event_id is already stored with different content (or in another stream).",
        "Report it: two writers used one event id for different events.",
    ),
    C.MISSING_CAUSE: I(
        False,
        "store",
        "A non-root event was appended without caused_by.",
        "Give the event the id of the event that caused it.",
    ),
    C.EVENT_UNCATALOGUED: I(
        False,
        "store",
        "An event was written with a type schemas/event_catalogue.py does not hold, or with "
        "another type's payload model.",
        "Add the type (a new version for a changed payload) to the catalogue, with its model.",
    ),
    C.SCHEMA_NOT_MIGRATED: I(
        False,
        "store",
        "The database schema is missing or older than this version of Forge.",
        "Run `forge db upgrade` (or the deployment's migration) and restart.",
    ),
    C.ARTIFACT_NOT_FOUND: I(
        False,
        "store",
        "No blob is stored under the requested sha256.",
        "Check the reference; the artifact store may have been replaced or pruned.",
    ),
    C.ARTIFACT_CORRUPT: I(
        False,
        "store",
        "A stored blob's bytes no longer hash to its address.",
        "Restore the blob from a backup; do not trust runs that read it.",
    ),
    C.ARTIFACT_TOO_LARGE: I(
        False,
        "store",
        "A blob is larger than the caller allowed.",
        "Use a smaller file, or pass it as a run input instead of inline.",
    ),
    C.UNSAFE_SOURCE: I(
        False,
        "store",
        "A source path is a symlink or not a regular file, so it is not read.",
        "Pass a regular file.",
    ),
    C.SKILL_PACKAGE_REFUSED: I(
        False,
        "store",
        "A skill package directory cannot be registered (unsafe, too large, invalid SKILL.md).",
        "Fix the package as the message says and register it again.",
    ),
    C.SKILL_NOT_REGISTERED: I(
        False,
        "store",
        "The tenant has no such skill (or not at the requested digest).",
        "Register it (`forge skills register DIR`) or fix the id/digest.",
    ),
    C.SKILL_INTEGRITY: I(
        False,
        "store",
        "Stored skill bytes or rows no longer match the registered digest.",
        "Register the skill again; do not trust runs that loaded it.",
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
    C.UNAUTHENTICATED: I(
        False,
        "access",
        "A request carried no API key, or one that is malformed, unknown, revoked or expired.",
        "Send `Authorization: Bearer <key>` with a live key (`forge keys create`).",
    ),
    C.FORBIDDEN: I(
        False,
        "access",
        "The key's role may not do this.",
        "Use a key with the role the message names (`forge keys create --role ROLE`).",
        "Use a key with the role the message names (an admin makes one: POST /v1/keys).",
    ),
    C.NOT_FOUND: I(
        False,
        "access",
        "The tenant has nothing with that id (another tenant's ids answer the same way).",
        "Check the id, and that the key belongs to the tenant that owns it.",
    ),
    C.TENANT_INVALID: I(
        False,
        "access",
        "A tenant that cannot be created or used: an invalid id, one that exists, one unknown.",
        "Use `forge tenants list` to see the tenants; ids are lower-case letters and digits.",
    ),
    C.TENANT_MISMATCH: I(
        False,
        "access",
        "A worker refused an activity whose input names another tenant than the workflow it "
        "runs for (its ForgeTenant): the worker acts only for the run's own tenant.",
        "A bug or a forged start: the run fails before the activity touches anything. Start "
        "runs through `forge` or the API, which set the tenant once for both.",
    ),
    C.QUOTA_EXCEEDED: I(
        False,
        "access",
        "The tenant is at a quota: as many runs as it may have at once, or no model tokens left "
        "today (UTC). Nothing was started.",
        "Retry after the time the message names (HTTP: Retry-After), or have an admin raise the "
        "quota with `forge tenants update TENANT --max-runs N --max-tokens-per-day N`.",
        "Retry after Retry-After, or have the operator raise the tenant's quota (GET /v1/quota "
        "shows it).",
    ),
    C.IDEMPOTENCY_MISMATCH: I(
        False,
        "access",
        "An Idempotency-Key was reused with a different request.",
        "Use a new key for a new request; resend the first request's exact body to replay it.",
    ),
    C.IDEMPOTENCY_IN_PROGRESS: I(
        True,
        "access",
        "The first request under this Idempotency-Key is still being answered.",
        "Retry in a moment: the first answer is then replayed.",
    ),
    C.REQUEST_INVALID: I(
        False,
        "access",
        "A request body, parameter or upload is malformed, unknown or too large.",
        "Fix the field the message names (the API's schema is at /openapi.json).",
    ),
    C.REQUEST_TOO_LARGE: I(
        False,
        "access",
        "A request body is larger than the API accepts (FORGE_API_MAX_BODY_BYTES).",
        "Send a smaller body: upload files (POST /v1/uploads) and name them as inputs.",
    ),
    C.WEBHOOK_INVALID: I(
        False,
        "access",
        "A webhook that cannot be registered: its URL is not http(s) or cannot be judged, or "
        "it names an event type webhooks do not deliver.",
        "Give an http:// or https:// URL with a host name or IP, and events among "
        "gate.requested.v1, run.completed.v1, run.failed.v1.",
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
    C.SETTINGS_INVALID: I(
        False,
        "config",
        "An environment variable holds a value Forge cannot use.",
        "Fix the variable named (the expected form is in the message).",
    ),
    C.DEV_SERVER: I(
        False,
        "config",
        "The embedded Temporal dev server could not be found, started, reached or stopped.",
        "Set FORGE_TEMPORAL_ADDRESS to a running server, or check the message's detail.",
    ),
    C.USAGE_INVALID: I(
        False,
        "config",
        "A command was given an argument or option it does not take, one it needs was left "
        "out, or a value is not of its form (a word for a number, an unknown choice).",
        "Fix the argument or option the message names; the command's --help lists each.",
    ),
    C.FILE_UNUSABLE: I(
        False,
        "config",
        "A file or directory a command reads or writes cannot be used: it is missing or of the "
        "wrong kind, cannot be read or written, or its content is too large or not UTF-8 text.",
        "Check the path the message names: that it exists, is a file (or a directory) as asked, "
        "and that you may read (or write) it.",
    ),
}

CATALOGUE: dict[C, I] = {**_OTHER_CODES, **STEP_CODES}


def info(code: C) -> I:
    """The catalogue entry of a code."""
    return CATALOGUE[code]
