"""Benchmarks, run by `make bench` (never by `make test`); figures go to bench-results.json."""
