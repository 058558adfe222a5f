"""Model providers (Anthropic; scripted for tests and demos), the prompt store and the gateway."""
