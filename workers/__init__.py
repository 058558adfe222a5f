"""Process entry points: worker, CLI, settings and the embedded Temporal dev server."""
