"""The default tenant and project ids and the pattern every scope id matches; plain constants.

The only place the default tenant and project are spelled; `schemas.scope` builds the Scope
model on them and re-exports them. Kept free of pydantic so the CLI's option defaults (`--tenant
default`) cost no model imports at start (issue 34 §1); a test walks `schemas/`, `activities/`,
`workers/` and `workflows/` to keep the spelling here.
"""

__all__ = ["DEFAULT_PROJECT", "DEFAULT_TENANT", "SCOPE_ID_PATTERN"]

# Tenant and project ids name key prefixes in the artifact store and rows in the event log:
# a lower-case letter or digit first (never "." or ".."), then lower-case letters, digits, "_",
# "-" or ".", no "/". Lower case only: on a case-insensitive filesystem "Acme" and "acme" would
# be one directory of the local artifact store, and so one tenant.
SCOPE_ID_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,127}$"

DEFAULT_TENANT = "default"
DEFAULT_PROJECT = "default"
