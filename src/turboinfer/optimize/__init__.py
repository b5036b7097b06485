"""Optimize: passes, the accuracy oracle, ask/tell search under a hard accuracy budget, and the decision log."""
