"""Worked examples of plugging a new method into the suite (docs/studies.md, "Audit a new method")."""
