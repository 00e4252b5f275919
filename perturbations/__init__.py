"""Perturbations of the ground-truth datasets: the learned manipulation m(w) of paper 002
(manipulation.py, generate.py), the noise baseline (noise.py) and the artefact format both
share (artefact.py). `benchmark.data.make_variant` takes the artefact loader
(`artefact.load_variant`) from its caller when a variant names an artefact directory
(data.variant = 'modified' | 'noisy', data.artefact = DIR): the data layer never imports
this package.
"""

import os

# TensorFlow reads its C++ log level once, when it is first imported: set here, before any
# module of the suite imports it, so that commands print no C++ start-up noise such as
# "failed call to cuInit" on a machine without a GPU (errors still reach Python; a user's own
# setting wins).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
