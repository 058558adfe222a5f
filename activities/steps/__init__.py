"""Step activities: step__execute and step__usage, step__reuse, run__finalize.

The thin Temporal layer over the harness: one attempt of step__execute (activity.py) is a
StepAttempt run through the nine harness steps in activities/harness/ (run_attempt.py), whose
events and usage live on the step's stream (activities/harness/ledger.py).
"""
