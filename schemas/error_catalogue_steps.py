"""The catalogue entries of a step attempt's failures: the step, its sandbox and its tool calls.

Step code sees the tool codes as its bridge call's failure class; a step's contract (its repair
policy) decides whether its own failure is retried, and `retryable` here is the default.
"""

from schemas.error_codes import CodeInfo as I
from schemas.error_codes import ErrorCode as C

STEP_CODES: dict[C, I] = {
    C.SANDBOX_SESSION_DEAD: I(
        True,
        "step",
        "The step's sandbox session died mid-attempt.",
        "Retried under the same contract; if it repeats, check the worker's logs for the sandbox.",
    ),
    C.SANDBOX_TRANSPORT_5XX: I(
        True,
        "step",
        "The sandbox transport failed.",
        "Retried under the same contract.",
    ),
    C.READINESS_PROBE: I(
        True,
        "step",
        "The sandbox did not become ready in time.",
        "Retried; check the worker host's load.",
    ),
    C.STALE_CONTINUATION: I(
        True,
        "step",
        "A continued session no longer matches the attempt.",
        "Retried with a fresh session.",
    ),
    C.SANDBOX_OOM: I(
        True,
        "step",
        "The step's code ran out of memory.",
        "Retried per the contract; lower the data volume or raise the contract's memory limit.",
    ),
    C.SANDBOX_TIMEOUT: I(
        True,
        "step",
        "The step's code exceeded its wall-clock or CPU limit.",
        "Retried per the contract; make the code faster or raise the contract's limits.",
    ),
    C.OUTPUT_SHAPE: I(
        True,
        "step",
        "A declared output is missing or does not parse as its kind.",
        "Retried under the same contract; fix the code that writes the output named.",
    ),
    C.CODE_ERROR: I(
        False,
        "step",
        "The step's code raised or exited non-zero.",
        "Fix the code (the traceback tail is in the message) and run again.",
    ),
    C.POLICY_BLOCKED: I(
        False,
        "step",
        "The execution profile forbids what the step tried to do.",
        "Change the plan, or run it under a profile that allows it.",
    ),
    C.MISSING_INPUT: I(
        False,
        "step",
        "An input the contract names is absent or unreadable.",
        "Provide the input file named (`forge run --input`), or fix the plan's bindings.",
        "Provide the input named (a run's `inputs`, an uploaded file), or fix the plan's bindings.",
    ),
    C.CONTRACT_VIOLATION: I(
        False,
        "step",
        "The attempt broke its frozen contract (wrote outside outputs, changed an input).",
        "Fix the code so it writes only its declared outputs.",
    ),
    C.MAX_RETRIES_REACHED: I(
        False,
        "step",
        "The step used every attempt its repair policy allows.",
        "Read the last attempt's failure and fix its cause.",
    ),
    C.BUDGET_EXHAUSTED: I(
        False,
        "step",
        "The run's budget (tokens, cost, tool calls) has no room for this.",
        "Extend the budget (`forge budget extend RUN`) or lower the plan's needs.",
    ),
    C.LEDGER_CORRUPT: I(
        False,
        "step",
        "A usage event the platform wrote is malformed: accounting cannot be trusted.",
        "Report it; the run's event log needs repair before it can go on.",
    ),
    C.EXECUTOR_UNAVAILABLE: I(
        False,
        "step",
        "No executor can run this step here (no model, no frozen code, unknown backend).",
        "Configure a model provider or give the step frozen code; check the profile's executors.",
    ),
    C.EVALUATION_FAILED: I(
        True,
        "step",
        "An evaluate step's verdict did not pass.",
        "Look at the verdict's reasons; improve the evaluated output or the criteria.",
    ),
    C.EVALUATION_INVALID: I(
        True,
        "step",
        "The evaluator could not produce a valid verdict, or its bundle is unusable.",
        "Retried; if it persists, check the evaluation bundle named.",
    ),
    C.SKILL_OUTPUT_INVALID: I(
        True,
        "step",
        "A skill's output does not match what the skill declares.",
        "Retried; fix the skill or the code that calls it.",
    ),
    C.ERROR: I(
        True,
        "step",
        "An unexpected failure: an exception Forge does not classify (a bug).",
        "Report it with the run id; the message names the exception.",
    ),
    C.SANDBOX_UNAVAILABLE: I(
        False,
        "sandbox",
        "The requested isolation cannot be provided on this host; the step must not run.",
        "Install bubblewrap (bwrap) and enable user namespaces, or run the worker where they "
        "exist.",
    ),
    C.SANDBOX_BUSY: I(
        True,
        "sandbox",
        "The sandbox user is out of processes right now (EAGAIN).",
        "Retried later; lower step concurrency if it persists.",
    ),
    C.WORKSPACE_VIOLATION: I(
        False,
        "sandbox",
        "A workspace path is a symlink, a special file or otherwise not what the platform expects.",
        "Fix the step's code so it writes regular files under its workspace only.",
    ),
    C.NOT_REGULAR_FILE: I(
        False,
        "sandbox",
        "A path is a symlink, FIFO, directory or device; its content is never read.",
        "Write a regular file at that path.",
    ),
    C.SKILL_DENIED: I(
        False,
        "sandbox",
        "A step may not load a skill.",
        "Recompile the plan, or change the profile's skill policy.",
    ),
    C.UNKNOWN_TOOL: I(
        False,
        "tool",
        "Step code called a tool the bridge does not know.",
        "Call one of the tools listed in the message.",
    ),
    C.TOOL_NOT_ALLOWED: I(
        False,
        "tool",
        "The step's contract does not allow this tool.",
        "Add the tool to the step's allowed tools in the plan, or do without it.",
    ),
    C.TOOL_CRASHED: I(
        True,
        "tool",
        "A tool failed while handling the call.",
        "Retry the call; report it if it persists.",
    ),
    C.RESULT_TOO_LARGE: I(
        False,
        "tool",
        "A tool's result is larger than the bridge returns.",
        "Ask for less (narrower query, fewer rows).",
    ),
    C.BAD_ARGS: I(
        False,
        "tool",
        "A tool call's arguments are invalid.",
        "Fix the arguments as the message says.",
    ),
    C.BAD_ARGUMENTS: I(
        False,
        "tool",
        "A model or evaluator tool call's arguments are invalid.",
        "Fix the arguments as the message says.",
    ),
    C.EGRESS_BLOCKED: I(
        False,
        "tool",
        "The host is not on the profile's egress allowlist, or it resolves to an address that "
        "is not public (loopback, private, link-local, metadata).",
        "Use an allowed host, or add it to the allowlist; for a private address, name its IP.",
    ),
    C.HTTP_ERROR: I(
        True,
        "tool",
        "An HTTP request made through the bridge failed.",
        "Check the URL and the remote service.",
    ),
    C.HTTP_TIMEOUT: I(
        True,
        "tool",
        "An HTTP request made through the bridge timed out.",
        "Retry, or ask a faster endpoint.",
    ),
    C.EVALUATOR_UNAVAILABLE: I(
        False,
        "tool",
        "No evaluator model is bound for the step.",
        "Bind an evaluator in the profile, or configure a model provider.",
    ),
    C.BRIDGE_OVERLOADED: I(
        True,
        "tool",
        "The bridge refused a call: too many in flight or too much sent.",
        "Make fewer concurrent calls; retry later.",
    ),
    C.BRIDGE_BUSY: I(
        True,
        "tool",
        "The bridge is serving another connection.",
        "Retry the call.",
    ),
    C.BRIDGE_FAULT: I(
        True,
        "tool",
        "The bridge failed while handling the call (a platform fault).",
        "Retry; report it with the run id if it persists.",
    ),
    C.BAD_REQUEST: I(
        False,
        "tool",
        "Step code sent the bridge a malformed request (seen by the in-sandbox client).",
        "Call the bridge through forge_bridge with JSON arguments.",
    ),
    C.BRIDGE_PROTOCOL: I(
        False,
        "tool",
        "The bridge's reply is not what the protocol says (in-sandbox client).",
        "Report it: the client and the bridge disagree.",
    ),
    C.BRIDGE_TIMEOUT: I(
        True,
        "tool",
        "The bridge did not answer in time (in-sandbox client).",
        "Retry the call.",
    ),
    C.BRIDGE_UNAVAILABLE: I(
        False,
        "tool",
        "The sandbox has no bridge socket (in-sandbox client).",
        "Run the step with a tool-bridge execution mode.",
    ),
    C.BRIDGE_ERROR: I(
        False,
        "tool",
        "The bridge answered with an error that names no class (in-sandbox client).",
        "Read the message; report it if unclear.",
    ),
}
