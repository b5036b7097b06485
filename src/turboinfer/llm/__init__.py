"""A user's LLM: what its file says, its card and cache, the converters and exporters that build each engine's
artifact, the engine registry, the variant and its speed measurement."""
