"""Serving: a KServe V2 server with dynamic batching. It serves artifacts; it never optimizes or profiles."""
