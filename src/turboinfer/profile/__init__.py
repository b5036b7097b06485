"""Diagnosis: where the time goes, against what this machine can do."""
