"""Pure, deterministic compiler: no I/O, no clock, no randomness, no network."""
