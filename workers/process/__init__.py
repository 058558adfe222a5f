"""What runs inside a Forge process: the worker, the dev server, log masking, background ticks."""
