"""The run's state machine, pure: DAG readiness, failure skipping and the inputs a step reads."""
