"""Worked examples of plugging a new method into the suite (docs/audit.md)."""
