"""The compilation pipeline: passes A..E over a plan, one pure function per pass."""
