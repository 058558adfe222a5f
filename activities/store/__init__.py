"""The run engine's stores: the event log with its publish index, and the artifact store."""
