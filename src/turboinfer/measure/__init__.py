"""Timing and statistics: pure functions over raw samples."""
