"""The step harness: one attempt of one step, from workspace to published outputs."""
