"""The sandbox side of the tool bridge: bound read-only at /forge/lib inside every sandbox."""
