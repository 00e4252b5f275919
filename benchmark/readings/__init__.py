"""Readings of published studies: the analyses behind numbers in results/, each a function
of a study's stored outputs with its own tests, run as `python -m benchmark.readings NAME
STUDY_DIR` (benchmark/readings/__main__.py lists them)."""
