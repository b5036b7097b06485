"""Applications built on turboinfer's layers."""
