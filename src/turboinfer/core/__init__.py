"""Shared vocabulary: errors, value types, model cards and settings. Imports nothing above it."""
