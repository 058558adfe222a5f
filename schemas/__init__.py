"""Pydantic v2 models: the language every other Forge package speaks (no logic, no I/O)."""
