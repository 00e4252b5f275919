"""Perturbations of the ground-truth datasets: the learned manipulation m(w) of paper 002
(manipulation.py, generate.py), the noise baseline (noise.py) and the artefact format both
share (artefact.py). `benchmark.data.make_variant` imports the artefact loader when a
variant names an artefact directory (data.variant = 'modified' | 'noisy', data.artefact = DIR).
"""
