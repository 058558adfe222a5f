"""One module per pass, each a pure function named after its file."""
