"""Capsule runs: capsule__instantiate and a capsule run prepared for submission."""
