"""What a model must offer the suite, checked when the model is built (before step 1).

Required (the training loop, the runner and the metrics call these):
- `train_step(batch, step, seed) -> dict` of named scalar loss terms; `models.base.
  TrainableModel` provides it from `loss_terms(batch, step, seed) -> {'loss': ..., ...}`.
- `optimizers_list() -> list` and `optimizer_variables() -> [(optimizer, variables)]`
  (TrainableModel provides both for one optimiser).
- `representation(images float32 (n, h, w, c) in [0, 1]) -> codes (n, d)`: what the
  metrics score (a posterior mean, a quantised code).
Optional (the suite uses them when present, and checks them here when present):
- `input_kind`: 'images' (default), 'pairs' or 'pairs_with_negatives' (benchmark.run).
- `code_is_discrete`: True when `representation` takes finitely many values per dim
  (quantised codes, codebook indices); the runner then scores InfoMEC with the discrete
  estimator (`infomec.discrete`). Default False.
- `encode(images) -> dict` with at least 'mean' (n, d); 'logvar' (n, d) enables the active
  units / over-pruning check (paper 002 sec. 5.3); 'codes' is what a quantiser decodes.
- `decode_images(codes (n, d)) -> images (n, h, w, c) in [0, 1]`: reconstructions, PSNR
  and traversal figures.
- `decode(z) -> logits` with `reconstruction_loss(images, logits) -> (n,)`: the health
  section's reconstruction loss.

`check_model` calls every method it can on a batch of two blank images, so a missing or
malformed method fails with one error naming it and pointing to the template
(`examples/wae_mmd.py`), instead of after training.
"""

from __future__ import annotations

import numpy as np

from benchmark.core.errors import UserError

REQUIRED = ("train_step", "representation", "optimizers_list", "optimizer_variables")
INPUT_KINDS = ("images", "pairs", "pairs_with_negatives")
TEMPLATE = "examples/wae_mmd.py"


class ModelInterfaceError(UserError, TypeError):
    """A model lacks, or mis-implements, part of the interface this module describes."""


def _fail(origin: str, model, what: str):
    raise ModelInterfaceError(
        f"{origin} built {type(model).__name__}, which {what}. A model needs "
        f"{', '.join(REQUIRED)} (subclass models.base.TrainableModel and define loss_terms "
        f"and representation); see models/interface.py and the template {TEMPLATE}")


def _check_codes(origin, model, codes, what: str, batch: int) -> np.ndarray:
    try:
        array = np.asarray(codes, dtype=np.float64)
    except (TypeError, ValueError):
        _fail(origin, model, f"returned {type(codes).__name__} from {what}, expected an "
                             f"array (n, d)")
    if array.ndim != 2 or array.shape[0] != batch:
        _fail(origin, model, f"returned shape {array.shape} from {what} on {batch} images, "
                             f"expected ({batch}, d)")
    if not np.all(np.isfinite(array)):
        _fail(origin, model, f"returned non-finite values from {what} on blank images")
    return array


def check_model(model, observation_shape, origin: str = "the model factory"):
    """`model` if it satisfies the interface on two blank images of `observation_shape`,
    else one ModelInterfaceError naming what is missing or malformed."""
    missing = [name for name in REQUIRED if not callable(getattr(model, name, None))]
    if missing:
        _fail(origin, model, f"lacks {missing}")
    kind = getattr(model, "input_kind", "images")
    if kind not in INPUT_KINDS:
        _fail(origin, model, f"has input_kind {kind!r}, expected one of {INPUT_KINDS}")
    images = np.zeros((2,) + tuple(observation_shape), np.float32)
    codes = _check_codes(origin, model, model.representation(images), "representation", 2)
    if callable(getattr(model, "encode", None)):
        encoded = model.encode(images)
        if not isinstance(encoded, dict) or "mean" not in encoded:
            _fail(origin, model, f"returned {type(encoded).__name__} from encode, expected a "
                                 f"dict with at least 'mean'")
        for key in ("mean", "logvar"):
            if key in encoded:
                _check_codes(origin, model, encoded[key], f"encode(...)[{key!r}]", 2)
    if callable(getattr(model, "decode_images", None)):
        decoded = np.asarray(model.decode_images(codes.astype(np.float32)))
        if decoded.shape != images.shape:
            _fail(origin, model, f"returned shape {decoded.shape} from decode_images, "
                                 f"expected the images' shape {images.shape}")
    return model
