"""How large a plan and an objective may be: every free-text field, every list, the document.

A bounded input is what bounds the work done on it: recipe matching, the compile passes and the
ladder each do work linear in what they are given, so these caps (checked when a plan is parsed,
before anything is stored or started, on the CLI's path and the API's alike) are what keeps an
activity far inside its timeout. Each cap is far above any plan seen in the wild (the largest
example's mission is under 200 characters, its largest step code under 200).
"""

from typing import Annotated

from pydantic import Field

__all__ = [
    "CODE_MAX",
    "LIST_MAX",
    "MISSION_MAX",
    "NAME_MAX",
    "OBJECTIVE_MAX",
    "PATH_MAX",
    "PLAN_MAX_BYTES",
    "PROSE_MAX",
    "STEPS_MAX",
    "Code",
    "Label",
    "Name",
    "Note",
    "PathText",
    "Prose",
]

OBJECTIVE_MAX = 20_000  # an objective to match and plan; a plan's mission and step objectives
MISSION_MAX = OBJECTIVE_MAX
PROSE_MAX = 8_000  # success criteria, an approval's prompt, an evaluation's rubric line
NOTE_MAX = 2_000  # a description of an input or a parameter, a string default
LABEL_MAX = 200
NAME_MAX = 256  # ids, slots, keys, roles
PATH_MAX = 1_024
CODE_MAX = 256 * 1024  # a step's frozen code, in characters
STEPS_MAX = 1_000  # steps in one plan (the compile benchmark's largest plan)
LIST_MAX = 1_000  # entries of any other list or map of a plan
# The whole plan document as JSON: the same figure as the API's default body limit
# (FORGE_API_MAX_BODY_BYTES), so a plan the CLI accepts is one the API accepts.
PLAN_MAX_BYTES = 4 * 1024 * 1024

Label = Annotated[str, Field(max_length=LABEL_MAX)]
Name = Annotated[str, Field(max_length=NAME_MAX)]
PathText = Annotated[str, Field(max_length=PATH_MAX)]
Prose = Annotated[str, Field(max_length=PROSE_MAX)]
Note = Annotated[str, Field(max_length=NOTE_MAX)]
Code = Annotated[str, Field(max_length=CODE_MAX)]
