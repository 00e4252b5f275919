"""Perturbations of the ground-truth datasets: the learned manipulation m(w) of paper 002
(manipulation.py, generate.py), the noise baseline (noise.py) and the artefact format both
share (artefact.py). Importing this package lets `benchmark.data.load_data` load artefacts
(data.variant = 'modified' | 'noisy', data.artefact = DIR).
"""

from benchmark.data import register_artefact_loader
from perturbations import artefact

register_artefact_loader(artefact.load_variant)
