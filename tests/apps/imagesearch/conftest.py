"""A small real gallery (whole photos from installed packages) and an index over it, built once per module."""

from __future__ import annotations
