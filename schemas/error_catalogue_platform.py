"""The catalogue entries of the platform's own failures: its stores, access and configuration.

Kept apart from schemas.error_catalogue (plans, recipes, capsules, models, runs) and
schemas.error_catalogue_steps (a step attempt's failures) to keep each table short.
"""

from schemas.error_codes import CodeInfo as I
from schemas.error_codes import ErrorCode as C

PLATFORM_CODES: dict[C, I] = {
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
    C.DEPLOYMENT_REFUSED: I(
        False,
        "config",
        "Temporal refused a worker deployment change or read: no deployment name is set, the "
        "deployment or build is unknown (no worker of it has polled yet), or the server said no.",
        "Set FORGE_DEPLOYMENT_NAME as the workers have it, start a worker of the build "
        "(FORGE_BUILD_ID) first, and check `forge deploy status` for the builds that polled.",
    ),
    C.TEMPORAL_UNREACHABLE: I(
        True,
        "config",
        "The configured Temporal frontend did not answer in time, refused the connection or "
        "the TLS handshake, or refused the API key or client certificate.",
        "Check FORGE_TEMPORAL_ADDRESS (or TEMPORAL_ADDRESS), the FORGE_TEMPORAL_TLS_* files and "
        "the API key the message names (docs/configuration.md).",
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
