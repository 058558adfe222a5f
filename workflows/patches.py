"""The workflow.patched ids, one per change to the commands of Forge's workflows.

A patch id is removed only with workflow.deprecate_patch, once no history without its marker can
be replayed (docs/versioning.md). tests/replay/histories holds runs from before each of them.
"""

# A cancelled run cancels its in-flight steps (runs before it never issued those commands).
PATCH_CANCEL_INFLIGHT = "cancel-inflight-steps-v1"
# A step whose last attempt died without reporting asks step__usage for its recorded spend.
PATCH_LOST_USAGE = "usage-of-lost-failures-v1"
# A gate decision or budget extension during a round's awaits wakes the next round.
CHANGES_DURING_A_ROUND = "changes-during-a-round-v1"
# A run matches the recipe library (recipes__match) before compiling.
PATCH_RECIPES = "recipes-match-v1"
# An objective no recipe matches is planned by the planner model (compile__plan).
PATCH_PLANNER = "model-planner-v1"
# Passes B..E run as one activity (compile__passes) instead of one activity per pass, and a run
# started with a plan appends run.started and its recipe trail with run.compiled (or run.failed).
PATCH_FRONT_END = "front-end-v2"
# A model step goes to the task queue of its binding's provider (schemas/names.model_queue), so
# a worker without that model never takes it.
PATCH_MODEL_QUEUES = "model-queues-v1"
# A scheduled time's capsule run is asked to cancel (not terminated) when its scheduled workflow
# closes early (an overlap policy's cancel-other or terminate-other), so it records run.cancelled.
PATCH_SCHEDULED_CHILD_CANCEL = "scheduled-child-cancel-v1"
# A child workflow (a scheduled time's capsule run, a sub-recipe's run) carries its tenant as
# the ForgeTenant search attribute, as every workflow a client starts does.
PATCH_CHILD_TENANT_ATTRIBUTE = "child-tenant-attribute-v1"
# A budget cap given at submit replaces only that cap: the profile's other caps stay (runs
# before it dropped them, so a budget they never hit could now block them).
PATCH_PROFILE_CAPS = "profile-caps-kept-v1"
# A run cancelled in its front end waits for the activity in flight (recipes__match,
# compile__plan, compile__passes) to stop, then records run.cancelled (runs before it closed
# at once, with the activity still running and no run.cancelled).
PATCH_FRONT_END_CANCEL = "front-end-cancel-v1"
