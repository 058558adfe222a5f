"""The nine sub-steps of Pass C (seed 000 §5.4), one module each."""
