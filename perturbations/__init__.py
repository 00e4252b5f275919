"""Perturbations of the ground-truth datasets: the learned manipulation m(w) of paper 002
(manipulation.py, generate.py), the noise baseline (noise.py) and the artefact format both
share (artefact.py). `benchmark.data.make_variant` takes the artefact loader
(`artefact.load_variant`) from its caller when a variant names an artefact directory
(data.variant = 'modified' | 'noisy', data.artefact = DIR): the data layer never imports
this package.
"""

from benchmark.core import quiet_start

quiet_start.install()            # before any module of the suite imports TensorFlow
