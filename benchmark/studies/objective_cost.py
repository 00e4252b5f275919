"""python -m benchmark.objective_cost RUN_DIR --variants=rotated@5,noisy@0.3488 [--match=noisy]

What a change of the images costs a trained model's reconstruction objective. This is the
quantity in which a study's control should match its manipulation when the objective is
not a squared error.

The suite's decoders score a reconstruction with the Bernoulli cross-entropy
(models/losses.py), and that loss is linear in its target t:

    CE(t, p) = −log(1 − p) − t · logit(p).

So a change of the target from x to x′ at fixed logits costs exactly

    ΔCE = Σ_pixels (x′ − x) · (−logit),

which is an L1 size weighted by how sure the decoder is. It is not the energy
Σ (x′ − x)² that a squared error sees. The logits are the run's reconstruction of each
clean image, decoded from its posterior mean. The clean images and each variant's are
rebuilt from the run's own configuration (its fixed factors and source) with
`data.variant` and `data.eps` replaced: the original's for the clean ones.

Prints one line per variant and writes RUN_DIR/objective_cost.json atomically:
{'run', 'step', 'images', 'variants': {label: {'cost_per_image' (mean ΔCE, nats),
'energy_per_image', 'mean_abs'}}, 'matched': {variant: {'eps', 'cost_per_image', 'to'
(the arm matched)}}}.
With --match=VARIANT, the strength of VARIANT whose cost equals the first --variants
arm's is found by bisection on [--match_low, --match_high]. The cost must rise with the
strength across that range, else the match is an error that says so. A run needs its
operative_config.gin and checkpoints/ (not kept in git: retrain first, as
`python -m benchmark.posterior_reach` says).
"""

from __future__ import annotations

import pathlib

import numpy as np

from benchmark.core.arm_label import ArmLabel
from benchmark.core.errors import ConfigError, cli_main
from benchmark.metrics import codes as codes_lib

#: images per batch through the decoder
BATCH = 256
#: bisection steps of --match: the strength's bracket shrinks 2**-MATCH_STEPS-fold
MATCH_STEPS = 40


def bernoulli_cost(clean: np.ndarray, changed: np.ndarray, logits: np.ndarray) -> np.ndarray:
    """float64 (n,): Σ over each image's pixels of (changed − clean) · (−logits), which is
    CE(changed, σ(logits)) − CE(clean, σ(logits)) exactly, in nats. All three have the
    same shape (n, h, w, c); the images are in [0, 1] and the logits are finite."""
    clean, changed, logits = (np.asarray(a, np.float64) for a in (clean, changed, logits))
    if not clean.shape == changed.shape == logits.shape or clean.ndim < 2:
        raise codes_lib.MetricInputError(
            f"expected clean images, changed images and logits of one shape (n, ...), "
            f"found {clean.shape}, {changed.shape} and {logits.shape}")
    if not np.all(np.isfinite(logits)):
        raise codes_lib.MetricInputError("expected finite logits, found NaN or inf")
    return np.sum((changed - clean) * -logits, axis=tuple(range(1, clean.ndim)))


def match_strength(cost_of, target: float, low: float, high: float,
                   steps: int = MATCH_STEPS) -> float:
    """The strength in [low, high] at which cost_of(strength) equals `target`, by
    bisection. cost_of must rise with the strength: ValueError naming the bracket's costs
    when the target lies outside them."""
    at_low, at_high = cost_of(low), cost_of(high)
    if not at_low <= target <= at_high:
        raise ValueError(f"--match: expected the cost to rise through {target:.4g} between "
                         f"strengths {low:g} and {high:g}, found {at_low:.4g} and "
                         f"{at_high:.4g}: widen --match_low/--match_high")
    for _ in range(steps):
        middle = 0.5 * (low + high)
        if cost_of(middle) < target:
            low = middle
        else:
            high = middle
    return 0.5 * (low + high)


def _variant_data(run_dir: pathlib.Path, label: ArmLabel):
    """The run's data with its variant replaced by `label`'s (its other bindings kept)."""
    from benchmark.studies.posterior_reach import run_data

    bindings = [f"data.variant = '{label.base}'"]
    if label.eps is not None:
        bindings.append(f"data.eps = {label.eps!r}")
    return run_data(run_dir, bindings)


def _clean_logits(model, images: np.ndarray) -> np.ndarray:
    """The decoder's logits of each image's reconstruction from its posterior mean."""
    import tensorflow as tf

    out = []
    for batch in codes_lib.batches(images, BATCH):
        encoded = model.encode(tf.constant(batch, tf.float32))
        mean = encoded["mean"] if isinstance(encoded, dict) else encoded
        out.append(np.asarray(model.decode(mean), np.float64))
    return np.concatenate(out)


def run_costs(run_dir, variants: list[str], match: str | None = None,
              match_low: float = 0.001, match_high: float = 1.0) -> dict:
    """The objective_cost.json record of one run (module docstring)."""
    from benchmark.studies.posterior_reach import trained_run

    labels = [ArmLabel.parse(v) for v in variants]
    if not labels:
        raise ConfigError("--variants: expected at least one arm, e.g. rotated@5, found none")
    run_dir = pathlib.Path(run_dir)
    _, model, step = trained_run(run_dir)       # a run without checkpoints fails here, fast

    from benchmark.data.change import arm_change
    from models import losses

    if getattr(model, "reconstruction_loss", None) is not losses.bernoulli_reconstruction:
        raise codes_lib.MetricInputError(
            f"{run_dir}: expected a model scored by the Bernoulli reconstruction "
            f"(models.losses.bernoulli_reconstruction), found "
            f"{getattr(model, 'reconstruction_loss', None)!r}: its cost is not this one")
    original = _variant_data(run_dir, ArmLabel("original"))
    factors = original.factors_of(np.arange(original.num_images))
    clean = original.observations_from_factors(factors)
    logits = _clean_logits(model, clean)

    def cost(variant) -> float:
        return float(np.mean(bernoulli_cost(clean, variant.observations_from_factors(factors),
                                            logits)))

    rows = {}
    for label in labels:
        variant = _variant_data(run_dir, label)
        rows[label.shown()] = {"cost_per_image": cost(variant),
                               **{k: v for k, v in arm_change(original, variant).items()
                                  if k in ("energy_per_image", "mean_abs")}}
    matched = {}
    if match:
        target = rows[labels[0].shown()]["cost_per_image"]
        eps = match_strength(lambda e: cost(_variant_data(run_dir, ArmLabel(match, repr(e)))),
                             target, match_low, match_high)
        matched[match] = {"eps": eps, "cost_per_image": cost(
            _variant_data(run_dir, ArmLabel(match, repr(eps)))), "to": labels[0].shown()}
    return {"run": run_dir.name, "step": step, "images": len(factors), "variants": rows,
            "matched": matched}


def define_flags() -> None:
    """The command's flags."""
    from absl import flags

    flags.DEFINE_list("variants", None, "Arms to cost, e.g. rotated@5,noisy@0.3488; the "
                      "first is the one --match matches.")
    flags.DEFINE_string("match", None, "A variant (e.g. noisy) whose strength to match to "
                        "the first arm's cost.")
    flags.DEFINE_float("match_low", 0.001, "--match: the bracket's lower strength.")
    flags.DEFINE_float("match_high", 1.0, "--match: the bracket's upper strength.")


@cli_main
def main(argv) -> None:
    from absl import app, flags

    from benchmark.core.atomic import write_json

    if len(argv) != 2:
        raise app.UsageError("usage: python -m benchmark.objective_cost RUN_DIR "
                             "--variants=rotated@5,noisy@0.3488 [--match=noisy]")
    flag = flags.FLAGS
    record = run_costs(argv[1], flag.variants or [], flag.match, flag.match_low,
                       flag.match_high)
    for label, row in record["variants"].items():
        print(f"{label:16s} cost {row['cost_per_image']:9.2f} nats/image  energy "
              f"{row['energy_per_image']:8.2f}  mean |Δx| {row['mean_abs']:.4f}")
    for variant, row in record["matched"].items():
        print(f"{variant} matched to {row['to']}: eps {row['eps']:.5f} (cost "
              f"{row['cost_per_image']:.2f})")
    out = pathlib.Path(argv[1]) / "objective_cost.json"
    write_json(out, record)
    print(f"written {out}")
