"""Schedules (issue 17): checking a schedule's options (spec.py) and its input templates.

templates.py renders `{scheduled:FORMAT}` placeholders from the scheduled start time, never the
wall clock. No Temporal client calls here: workers/ builds the ScheduleSpec from what these
functions accept.
"""
