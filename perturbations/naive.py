"""Paper 002 sec. 4.4's "naive way" of favouring the entangled reference: move each image
closer to its projection on the entangled representation and away from its projection on
the disentangled one. The suite's reading (the paper gives no formula): a model's
projection of x is its reconstruction r(x) = sigmoid(decoder(encoder(x)['mean'])), so the
move is along r_ent(x) - r_dis(x) (each side averaged over its references):

    d(x)     = (r_ent(x) - r_dis(x)) / max over pixels |r_ent(x) - r_dis(x)|   in [-1, 1]
    delta(x) = clip(x + d(x), 0, 1) - x        (the move stops at the pixel range)
    x' = x + eps * delta(x)                    (eps in [0, 1]: never leaves [0, 1])

The clip is the suite's choice and matters: the additive arms' reflect would fold a move
that leaves [0, 1] back into the range, and dSprites' pixels are exactly 0 or 1, so every
pixel whose move points out of the range (a background pixel the entangled side wants
darker) would move the *other* way, towards the disentangled reconstruction. With reflect
the arm was the same whichever reference was called entangled, and 27 % of its energy
pointed the wrong way (found by review before the objective check ran, 2026-11-27).

It is the positive control of the game's objective: a perturbation built
to make the entangled decoder's job easier, which re-adaptation must reward over noise of
the same energy if the objective can see such a thing at all. The deltas of every image of
the dataset are computed once (a dataset of at most MAX_IMAGES images, such as the
ellipse's 1,024); `matched_eps` finds the strength of any such arm whose energy equals a
target's.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from benchmark.core.errors import ConfigError
from benchmark.data.ground_truth import GroundTruthData
from benchmark.data.variants import AdditivePerturbation, reflect

#: the most images whose deltas are computed up front (the arm's whole grid)
MAX_IMAGES = 65536


def reconstructions(pairs, images: np.ndarray, batch_size: int = 256) -> np.ndarray:
    """Mean over (encoder, decoder) pairs of sigmoid(decoder(encoder(x)['mean'])): float32
    (n, *image shape) in [0, 1]."""
    import tensorflow as tf
    total = np.zeros(images.shape, np.float64)
    for encoder, decoder in pairs:
        for start in range(0, len(images), batch_size):
            chunk = tf.constant(images[start:start + batch_size])
            logits = decoder(encoder(chunk)["mean"])
            total[start:start + batch_size] += tf.sigmoid(logits).numpy()
    return (total / len(pairs)).astype(np.float32)


def feasible_move(images: np.ndarray, entangled: np.ndarray, disentangled: np.ndarray
                  ) -> np.ndarray:
    """delta (module docstring) of images (n, ...) in [0, 1] from the two sides'
    reconstructions (same shape): float32, x + delta in [0, 1], each pixel moved towards
    the entangled reconstruction and away from the disentangled one (or not at all)."""
    difference = entangled.astype(np.float64) - disentangled
    scale = np.abs(difference).reshape(len(images), -1).max(axis=1)
    direction = difference / np.where(scale > 0, scale, 1.0).reshape(-1, *[1] * (
        difference.ndim - 1))
    return (np.clip(images + direction, 0.0, 1.0) - images).astype(np.float32)


#: the move towards each side: its variant name and its delta, as the artefact records it
TOWARDS = {"entangled": ("naive", "clip(x + (r_ent - r_dis) / max |r_ent - r_dis|, 0, 1) - x"),
           "disentangled": ("naive_swapped",
                            "clip(x + (r_dis - r_ent) / max |r_dis - r_ent|, 0, 1) - x")}


class NaiveData(AdditivePerturbation):
    """The naive arm (module docstring) of `base` at strength eps, from the entangled and
    disentangled references' (encoder, decoder) pairs; towards='disentangled' is its
    control with the references' roles swapped ('naive_swapped': the same construction,
    each image moved towards the disentangled reference's reconstruction and away from the
    entangled one's)."""

    def __init__(self, base: GroundTruthData, eps: float, entangled, disentangled,
                 deltas: np.ndarray | None = None, towards: str = "entangled"):
        if towards not in TOWARDS:
            raise ConfigError(f"the naive move goes towards one of {sorted(TOWARDS)}, found "
                              f"{towards!r}")
        if base.num_images > MAX_IMAGES:
            raise ConfigError(f"the naive arm computes every image's delta: expected at "
                              f"most {MAX_IMAGES} images, found {base.num_images}")
        if deltas is None:
            if not entangled or not disentangled:
                raise ConfigError("the naive arm needs entangled and disentangled references")
            images = base.observations_from_factors(base.factors_of(np.arange(base.num_images)))
            toward, away = ((entangled, disentangled) if towards == "entangled"
                            else (disentangled, entangled))
            deltas = feasible_move(images, reconstructions(toward, images),
                                   reconstructions(away, images))
        self.deltas = np.asarray(deltas, np.float32)
        self.towards = towards
        variant, formula = TOWARDS[towards]
        super().__init__(base, self.naive_delta, eps, variant=variant,
                         metadata={"delta": formula})

    def naive_delta(self, factors) -> np.ndarray:
        return self.deltas[self.base.index_of(factors)]

    def at(self, eps: float) -> "NaiveData":
        """The same arm at another strength (the deltas reused)."""
        return NaiveData(self.base, eps, None, None, deltas=self.deltas, towards=self.towards)


def matched_eps(make_arm: Callable[[float], AdditivePerturbation], target: float,
                power: int = 2, rtol: float = 1e-4, num_images: int | None = None) -> float:
    """The eps in (0, 1] at which make_arm(eps)'s mean |x' - x|^power (benchmark/data/
    oracle.mean_change over every image, or a seeded sample of num_images; power 2: the
    energy a squared error sees) equals `target` > 0, by bisection. Bisection assumes the
    change grows with eps, true for binary images such as dSprites' (reflect folds a grey
    pixel pushed past 0 or 1 back, so on grey images a large eps can change less);
    ValueError when even eps = 1 changes the images less.

    An additive arm's delta does not depend on eps (x' = reflect(x + eps delta)), so the
    images and deltas are computed once, at eps 1, and each bisection step is arithmetic
    (the same float32 operations as AdditivePerturbation's); the eps found is checked
    against make_arm(eps) itself, so an arm whose delta does depend on eps is an error, not
    a wrong match."""
    from benchmark.data.oracle import _grid_or_sample, bisect_eps, mean_change

    if not target > 0:
        raise ValueError(f"matched_eps: expected a target change > 0, found {target}")
    arm = make_arm(1.0)
    factors = _grid_or_sample(arm, num_images, 0)
    images = arm.base.observations_from_factors(factors)
    deltas = np.concatenate([arm.delta(factors[i:i + 512])
                             for i in range(0, len(factors), 512)])

    def change(eps: float) -> float:
        moved = deltas * np.float32(eps)
        moved += images
        return float((np.abs(reflect(moved) - images, dtype=np.float64) ** power).mean())

    eps = bisect_eps(change, target, f"no eps in (0, 1] reaches mean |x' - x|^{power}", rtol)
    found = mean_change(make_arm(eps), num_images=num_images, power=power)
    if abs(found - change(eps)) > 1e-6 * max(found, 1e-12):
        raise ValueError(f"matched_eps: the arm's change at eps {eps:.5f} is {found:.6g}, "
                         f"not the {change(eps):.6g} of eps times its delta at eps 1: its "
                         f"delta depends on eps, which matched_eps cannot match")
    return eps
