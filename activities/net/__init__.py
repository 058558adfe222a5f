"""Outbound network requests made on someone's behalf: public addresses only (docs/security.md)."""
