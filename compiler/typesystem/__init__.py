"""The type system: library build and checks, naming rules, 5-rank compatibility."""
