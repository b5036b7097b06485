"""turboinfer: diagnose slow inference, optimize it inside an accuracy budget, prove it, serve it."""

__version__ = "0.1.0"
