"""Floor 4 (docs/architecture.md): what is made of many runs: grids of runs (study),
reports (report, mechanism, paper_tables), the audit (audit, battery, external,
strength_choice), the paper pipeline (pipeline), benchmarks (speed) and sanity checks
(cliff_sanity). May import every lower floor, perturbations/ included."""
