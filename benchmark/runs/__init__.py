"""Floor 2 (docs/architecture.md): one run of one configuration: the training loop (train),
the runner (run; the command `python -m benchmark.run`), its identity (fingerprint), its
files (results, figures, curves), several runs in one process (worker) and the
fingerprints a study's runs will have (identities). Imports floors 0 and 1; the artefact
loader of perturbations/ (floor 3) is passed in by the entry modules."""
