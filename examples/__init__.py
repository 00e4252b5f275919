"""Worked examples of plugging a new method into the suite (README, "Audit a new method")."""
