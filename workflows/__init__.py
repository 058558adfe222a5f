"""Temporal workflow definitions only: orchestration, no logic, no I/O."""
