"""Test support: servers and helpers shared by test packages."""
