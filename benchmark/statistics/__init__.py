"""Floor 1 (docs/architecture.md): the statistics report and audit share (stats), the
seeds-needed computation (power; the command `python -m benchmark.power`) and the
pre-registered hypotheses (hypotheses). Imports floor 0 only."""
