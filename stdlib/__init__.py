"""Data: the standard library of packs, kinds, slots, policies, profiles and adapters."""
