"""The step harness: one attempt of one step, from workspace to published outputs.

run_attempt.py holds the nine steps in order; each concern has its own file:
- attempt.py: the attempt (its ids, drafts, call scope); failure.py: StepFailure, how it fails
- workspace.py: the workspace in (layout, inputs) and out (outputs stored, the done-note)
- checks.py: pre- and postflight receipts and every check of inputs, outputs and writes
  (receipts.py and receipt_*.py build a receipt: hashes, parses, summaries)
- program.py: frozen code or an adapter run in the sandbox, and how a program failed
- executors.py: step 6, choosing the executor (frozen, evaluator, Code-Act, sealed replay) with
  the tool bridge served (bridge_session.py); codeact.py, codeact_session.py, evaluator.py,
  replay.py, skills.py and params.py serve it
- ledger.py: the step's stream, where the attempt's events and usage are written and read
- heartbeats.py and cleanup.py: the side threads that beat for attempts and remove workspaces
"""
