"""What this machine is and what it can do, measured rather than looked up."""
