"""The sandbox side of a step: the harness, the runner and the receipts around executor code."""
