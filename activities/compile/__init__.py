"""The compiler's activities: Pass A with a model, passes B..E, the type library read from disk."""
