"""The compile-time token estimate: ceil(UTF-8 bytes / 4), documented and deterministic.

It only shapes packing (which blocks fit a bucket's allocation) and the budget report's
`used_at_compile`. It is not a tokenizer and does not try to be one: every model tokenizes
differently, and the count that matters is the one the provider reports. Budgets are enforced
on the provider's reported usage of each call (the usage ledger), never on this estimate.
Four bytes per token is close for English prose and code on current models and errs high for
non-Latin scripts (more bytes per character), which packs conservatively.
"""

ESTIMATOR = "ceil(utf8_bytes/4)"


def estimate_tokens(text: str) -> int:
    """Tokens `text` is assumed to cost at compile time: ceil(len(UTF-8 bytes) / 4)."""
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    return -(-size // 4)
