"""Backends behind one Session protocol; each backend module imports its framework lazily."""
