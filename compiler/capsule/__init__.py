"""Capsules, pure parts: sealing (seal.py), extraction (extract.py), diffs (diff.py)."""
