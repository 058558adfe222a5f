"""Every side effect Forge performs: file and network I/O, as plain code and Temporal activities."""
