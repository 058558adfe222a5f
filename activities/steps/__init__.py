"""Step activities: step__execute and step__usage, step__reuse, run__finalize, and the harness.

One attempt of step__execute (activity.py) is a StepAttempt (attempt.py): the nine harness steps
(run_attempt.py) with the step's executor (executors.py) and, for step code, the tool bridge
(bridge_session.py); its events and usage live on the step's stream (ledger.py).
"""
