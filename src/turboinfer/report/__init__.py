"""Self-contained HTML reports (plots embedded as PNG) built from result JSON alone."""
