"""Sandboxed execution of step code: bubblewrap runner, step harness, receipts, tool bridge."""
