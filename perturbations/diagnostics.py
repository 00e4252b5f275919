"""Diagnostics of a manipulation artefact: what m(w) looks like and how much it varies with w.

Paper 002 sec. 4.4 wants an m(w) that exploits "the different ways the noise was
distributed across the latent space": it must add variance *along the factors*. A pattern
that is the same for every image adds none (a decoder absorbs it as a bias), so the
numbers here separate the image-independent part of m from its w-dependent part.
All are computed on a uniform sample of factors w (a few hundred images
by default, a few seconds on a CPU):

- spread of m: mean |m|, std of m across images (mean over pixels of the per-pixel std),
  and the split of its energy E||m||^2 = ||E m||^2 (image-independent, the mean pattern)
  + E||m - E m||^2 (w-dependent);
- saturation: the fraction of pixels with |m| > 0.9, where tanh's gradient 1 - m^2 < 0.19;
- per-factor sensitivity: mean |m(w + one step of factor j) - m(w)|, the others held,
  absolute and relative to the spread between two independent random w's;
- the one-neuron scalar s = a . w + b through which m sees w (appendix B.1): its weights,
  its distribution over the whole factor grid, each factor's share of its variance, and
  how much m changes across the observed range of s;
- mean |x' - x| of the modified images x' = reflect(x + eps m(w)) beside the noise arm's
  (paper 002 sec. 5.2, uniform noise in [-eps, eps] at the dataset's eps);
- the *visible* m: what the modified data can see of m. The data is x' = reflect(x +
  eps m), and on binary images (dSprites: every pixel 0 or 1) reflect keeps only |m|:
  x' = x + eps |m| (1 - 2x). An m that flips its sign from image to image has a large
  w-dependent share of its raw energy that no modified image shows. `visible_m` is the
  spread of (x' - x) / eps * (1 - 2x) (= |m| there) on binary images, None on others
  (where reflect folds only the moves that leave [0, 1]);
- `minimum_effect`: whether the artefact is below a minimum effect (w-dependent share
  under 5 %, of the visible m where it is measured, else of m; or mean |x' - x| or its
  w-dependent part under one uint8 grey level).

Pure functions take arrays; `manipulation_diagnostics` runs them for a network and a
dataset, `artefact_diagnostics` for an artefact directory; `python -m perturbations.inspect`
is the command. Every value is a plain float / int / bool / str so the result is JSON.
"""

from __future__ import annotations

import json
import math
import pathlib
from typing import Iterable, Sequence

import numpy as np

from benchmark.core.atomic import atomic_path, write_json
from benchmark.data.variants import DEFAULT_EPS, NoisyData, reflect
from perturbations.artefact import EVIDENCE

DIAGNOSTICS_VERSION = 2          # 2: visible_m, and minimum_effect reads it
DEFAULT_IMAGES = 300
#: |m| above this counts as saturated: tanh's gradient there is 1 - 0.9^2 = 0.19.
SATURATION = 0.9
#: Floors below which a generated artefact is flagged (not targets: the w-dependent
#: energy should be a *clear* share of the total).
MIN_W_DEPENDENT_SHARE = 0.05
MIN_MEAN_ABS_CHANGE = 1.0 / 255.0          # one uint8 grey level
#: Quantiles (in %) of s reported, and the grid on which m is evaluated as a function of s.
QUANTILES = (0, 1, 5, 25, 50, 75, 95, 99, 100)
#: A wide fixed range of s (the range over which m was first measured).
WIDE_RANGE = (-10.0, 10.0)
#: Factor grids up to this many points are enumerated exactly for the distribution of s.
MAX_GRID_POINTS = 1 << 21


def _as_float64(m) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    if m.ndim < 2 or len(m) == 0:
        raise ValueError(f"expected a batch of perturbations (n >= 1, ...), found shape "
                         f"{m.shape}")
    return m


def spread(m) -> dict:
    """How much m varies across images, for m float (n, h, w, c) in [-1, 1] (n >= 1).

    Returns floats: `mean`, `mean_abs` (mean |m|), `std_across_images` (mean over pixels of
    the per-pixel std over the n images; 0 for a pattern shared by all images),
    `energy_per_pixel` = E||m||^2 / pixels, split exactly into
    `image_independent_energy_per_pixel` = ||mean pattern||^2 / pixels and
    `w_dependent_energy_per_pixel` = E||m - mean pattern||^2 / pixels, and their shares
    `image_independent_share` + `w_dependent_share` = 1 (a zero m has share 1 / 0: it has
    no w-dependent part), and `w_dependent_rms` = sqrt(w-dependent energy per pixel).
    """
    m = _as_float64(m)
    flat = m.reshape(len(m), -1)
    pattern = flat.mean(axis=0)
    variance = flat.var(axis=0)
    independent = float(np.mean(pattern ** 2))
    dependent = float(np.mean(variance))
    total = independent + dependent
    share = dependent / total if total > 0.0 else 0.0
    return {"mean": float(flat.mean()), "mean_abs": float(np.abs(flat).mean()),
            "std_across_images": float(np.sqrt(variance).mean()),
            "energy_per_pixel": total, "image_independent_energy_per_pixel": independent,
            "w_dependent_energy_per_pixel": dependent,
            "image_independent_share": 1.0 - share, "w_dependent_share": share,
            "w_dependent_rms": math.sqrt(dependent)}


def saturated_fraction(m, threshold: float = SATURATION) -> float:
    """Fraction in [0, 1] of the values of m (any shape) with |m| > threshold."""
    m = np.asarray(m)
    return float(np.mean(np.abs(m) > threshold)) if m.size else 0.0


def pair_spread(m) -> float:
    """Mean |m(w) - m(w~)| over pixels and independent pairs (w, w~): the first half of
    the batch m (n >= 2, ...) against the second. The scale of m's w-dependent change in
    the units of `factor_sensitivity` (0 for a pattern shared by all images)."""
    m = _as_float64(m)
    half = len(m) // 2
    if half == 0:
        raise ValueError(f"pair_spread needs at least 2 images, found {len(m)}")
    return float(np.abs(m[:half] - m[half:2 * half]).mean())


def stepped_factors(factors, factor_sizes) -> np.ndarray:
    """For each factor j, `factors` int (n, k) with factor j moved by one class: up, or down
    where it is at its last class (a factor of size 1 stays). Returns int64 (k, n, k)."""
    factors = np.asarray(factors, dtype=np.int64)
    sizes = np.asarray(factor_sizes, dtype=np.int64)
    if factors.ndim != 2 or factors.shape[1] != len(sizes):
        raise ValueError(f"expected factors (n, {len(sizes)}), found {factors.shape}")
    out = np.repeat(factors[None], len(sizes), axis=0)
    for j, size in enumerate(sizes):
        column = factors[:, j]
        out[j, :, j] = np.where(column + 1 < size, column + 1, np.maximum(column - 1, 0))
    return out


def factor_sensitivity(m, stepped: Iterable, factor_names: Sequence[str]) -> dict:
    """How much m changes when one factor steps, the others held.

    m: float (n, ...) = m(w); stepped: for each factor j (in `factor_names` order) the
    array m(w with factor j stepped by one class), each shaped like m. Returns
    {"absolute": {name: mean |m(w_j+) - m(w)|}, "relative": {name: absolute / pair spread},
    "pair_spread": mean |m(w) - m(w~)| over independent pairs (`pair_spread`; relative is 0
    where it is 0)}. A factor m ignores has absolute 0; relative near 1 means one step of
    it changes m as much as drawing a new random w does.
    """
    m = _as_float64(m)
    scale = pair_spread(m) if len(m) >= 2 else 0.0
    absolute = {}
    for name, moved in zip(factor_names, stepped, strict=True):
        moved = np.asarray(moved, dtype=np.float64)
        if moved.shape != m.shape:
            raise ValueError(f"factor {name}: expected stepped m of shape {m.shape}, found "
                             f"{moved.shape}")
        absolute[name] = float(np.abs(moved - m).mean())
    relative = {k: (v / scale if scale > 0.0 else 0.0) for k, v in absolute.items()}
    return {"absolute": absolute, "relative": relative, "pair_spread": scale}


def quantile_key(q) -> str:
    """'p5' for the 5 % quantile."""
    return f"p{q:g}"


def scalar_distribution(s, quantiles: Sequence[float] = QUANTILES) -> dict:
    """Distribution of the scalar s (float (n,)): mean, std and the quantiles (in %)
    keyed 'p0' ... 'p100'."""
    s = np.asarray(s, dtype=np.float64).reshape(-1)
    if len(s) == 0:
        raise ValueError("scalar_distribution needs at least one value")
    values = np.percentile(s, list(quantiles))
    return {"mean": float(s.mean()), "std": float(s.std()),
            "quantiles": {quantile_key(q): float(v) for q, v in zip(quantiles, values)}}


def scalar_variance_shares(kernel, factor_sizes, factor_names: Sequence[str]) -> dict:
    """Each factor's share of Var(s) for s = sum_j a_j w_j / (size_j - 1) + b with the
    factors independent and uniform over their classes: a_j^2 Var(w_j / (size_j - 1)) /
    Var(s), Var of a uniform class scaled to [0, 1] = (size + 1) / (12 (size - 1)) (0 for
    size 1). kernel: (k,) or (k, 1) weights a. Shares sum to 1 (all 0 when Var(s) = 0)."""
    a = np.asarray(kernel, dtype=np.float64).reshape(-1)
    sizes = np.asarray(factor_sizes, dtype=np.float64)
    if a.shape != sizes.shape:
        raise ValueError(f"expected {len(sizes)} weights, found {a.shape}")
    var = np.where(sizes > 1, (sizes + 1) / (12 * np.maximum(sizes - 1, 1)), 0.0)
    parts = a ** 2 * var
    total = parts.sum()
    return {n: float(p / total) if total > 0 else 0.0 for n, p in zip(factor_names, parts)}


def factor_grid(factor_sizes, rng: np.random.Generator, max_points: int = MAX_GRID_POINTS
                ) -> tuple[np.ndarray, bool]:
    """(factors int64 (N, k), exact): the whole factor grid when it has <= max_points
    points, otherwise max_points uniform samples (exact False)."""
    sizes = [int(s) for s in factor_sizes]
    if math.prod(sizes) <= max_points:
        return np.indices(sizes).reshape(len(sizes), -1).T.astype(np.int64), True
    return np.stack([rng.integers(0, s, max_points) for s in sizes], axis=1), False


def scalar_profile(s_grid, m_grid, keys: Sequence[str]) -> dict:
    """How m changes along s: s_grid float (q,) ascending (e.g. the quantiles of s, keyed
    `keys`, which must include 'p50'), m_grid (q, ...) = m at those s. Returns
    mean |m(s) - m(s_median)| per key, and mean |m(s_last) - m(s_first)| as
    `mean_abs_change_over_range` (0 when m does not depend on s)."""
    m_grid = _as_float64(m_grid)
    keys = list(keys)
    if len(keys) != len(m_grid) or len(np.asarray(s_grid).reshape(-1)) != len(m_grid):
        raise ValueError(f"expected one m per s and key, found {len(m_grid)} m, "
                         f"{len(np.asarray(s_grid).reshape(-1))} s and {len(keys)} keys")
    median = m_grid[keys.index("p50")]
    return {"mean_abs_change_from_median": {k: float(np.abs(mq - median).mean())
                                            for k, mq in zip(keys, m_grid)},
            "mean_abs_change_over_range": float(np.abs(m_grid[-1] - m_grid[0]).mean())}


def mean_abs_change(originals, delta, eps: float) -> float:
    """Mean |x' - x| for x' = reflect(x + eps delta): originals float (n, h, w, c) in
    [0, 1], delta the same shape in [-1, 1], eps in (0, 1]. At most eps."""
    x = np.asarray(originals, dtype=np.float32)
    moved = reflect(x + np.float32(eps) * np.asarray(delta, dtype=np.float32))
    return float(np.abs(moved - x).astype(np.float64).mean())


def minimum_effect(diagnostics: dict, min_w_dependent_share: float = MIN_W_DEPENDENT_SHARE,
                   min_mean_abs_change: float = MIN_MEAN_ABS_CHANGE) -> dict:
    """Whether an artefact's diagnostics are below a minimum effect: {"below_minimum":
    bool, "reasons": [str], "thresholds": {...}}. Below when m's w-dependent energy share
    (of the visible m when the diagnostics measured it) is under `min_w_dependent_share`,
    when mean |x' - x| is under `min_mean_abs_change`, or when the w-dependent part of the
    change (eps * w-dependent rms of the same m) is under it."""
    visible = diagnostics.get("visible_m")
    m = visible or diagnostics["m"]
    what = "the visible m's energy (what the modified images show)" if visible else (
        "m's energy")
    eps = diagnostics["eps"]
    change = diagnostics["change"]["modified_mean_abs_change"]
    reasons = []
    if m["w_dependent_share"] < min_w_dependent_share:
        reasons.append(f"w-dependent share of {what} {m['w_dependent_share']:.2%} < "
                       f"{min_w_dependent_share:.0%}: m is nearly the same pattern for "
                       "every image")
    if change < min_mean_abs_change:
        reasons.append(f"mean |x' - x| {change:.5f} < {min_mean_abs_change:.5f} (one grey "
                       "level)")
    if eps * m["w_dependent_rms"] < min_mean_abs_change:
        reasons.append(f"w-dependent change eps * rms {eps * m['w_dependent_rms']:.5f} < "
                       f"{min_mean_abs_change:.5f} (one grey level)")
    return {"below_minimum": bool(reasons), "reasons": reasons,
            "thresholds": {"min_w_dependent_share": min_w_dependent_share,
                           "min_mean_abs_change": min_mean_abs_change}}


def visible_spread(originals, m, eps: float) -> dict | None:
    """`spread` of what the modified images x' = reflect(x + eps m) show of m:
    (x' - x) / eps * (1 - 2x), which is |m| on binary originals (float (n, h, w, c), every
    pixel 0 or 1; module docstring); None when the originals are not binary."""
    x = np.asarray(originals, dtype=np.float32)
    if not np.isin(x, (0.0, 1.0)).all():
        return None
    moved = reflect(x + np.float32(eps) * np.asarray(m, dtype=np.float32))
    folded = (moved.astype(np.float64) - x) / float(eps) * (1.0 - 2.0 * x)
    return {**spread(folded), "fold": "(x' - x) / eps * (1 - 2x), binary images"}


def scalar_section(network, data, rng: np.random.Generator) -> dict | None:
    """The one-neuron scalar s = a . w + b of m (layer 'single_neuron', w scaled to [0, 1]):
    weights, distribution over the factor grid, variance shares, and m along s (observed
    quantiles and WIDE_RANGE). None when the network has no such layer."""
    import keras

    from benchmark.data.pipeline import scaled_factors

    try:
        neuron = network.get_layer("single_neuron")
    except ValueError:
        return None
    kernel, bias = (np.asarray(v, dtype=np.float64) for v in neuron.get_weights())
    names = list(data.factor_names)
    grid, exact = factor_grid(data.factor_sizes, rng)
    s = scaled_factors(grid, data.factor_sizes).astype(np.float64) @ kernel[:, 0] + bias[0]
    distribution = scalar_distribution(s)
    keys = list(distribution["quantiles"])
    m_of_s = keras.Model(neuron.output, network.output)
    s_grid = np.asarray(list(distribution["quantiles"].values()) + list(WIDE_RANGE),
                        dtype=np.float32)[:, None]
    m_grid = np.asarray(m_of_s(s_grid, training=False), dtype=np.float64)
    profile = scalar_profile(s_grid[:len(keys), 0], m_grid[:len(keys)], keys)
    return {"weights": {n: float(a) for n, a in zip(names, kernel[:, 0])},
            "bias": float(bias[0]), "points": int(len(s)), "exact_grid": exact,
            **distribution,
            "variance_share_by_factor": scalar_variance_shares(kernel, data.factor_sizes,
                                                               names),
            **profile,
            "wide_range": {"s": list(WIDE_RANGE), "mean_abs_change": float(
                np.abs(m_grid[-1] - m_grid[-2]).mean())}}


def manipulation_diagnostics(data, network, eps: float, num_images: int = DEFAULT_IMAGES,
                             seed: int = 0, noise_eps: float | None = None,
                             noise_seed: int = 0) -> dict:
    """All diagnostics of m(w) on `data` (the *original* GroundTruthData) at strength eps.

    network: m, scaled factors float32 (n, k) in [0, 1] -> float32 (n, *observation_shape)
    in [-1, 1] (perturbations.manipulation.manipulation_network). num_images (>= 2) uniform
    factor samples from `seed`; the noise arm is NoisyData at noise_eps (default: the
    dataset's eps, paper 002 sec. 5.2) on the same images, and also at eps when that
    differs. Costs (k + 1) * num_images evaluations of m. Returns a JSON-ready dict with
    sections m, factor_sensitivity, scalar, change, minimum_effect.
    """
    from perturbations.manipulation import manipulation_delta_fn

    if int(num_images) < 2:
        raise ValueError(f"diagnostics need at least 2 images, found {num_images}")
    rng = np.random.default_rng([int(seed), 9])
    factors = data.sample_factors(int(num_images), rng)
    originals = data.observations_from_factors(factors, rng)
    delta = manipulation_delta_fn(network, data.factor_sizes)
    m = delta(factors)
    names = list(data.factor_names)
    stepped = (delta(f) for f in stepped_factors(factors, data.factor_sizes))
    if noise_eps is None:
        noise_eps = DEFAULT_EPS.get(data.name, eps)
    change = {"modified_mean_abs_change": mean_abs_change(originals, m, eps),
              "noise_eps": float(noise_eps)}
    noise = NoisyData(data, eps=noise_eps, seed=noise_seed).delta(factors)
    change["noise_mean_abs_change"] = mean_abs_change(originals, noise, noise_eps)
    if not math.isclose(noise_eps, eps):
        change["noise_at_artefact_eps_mean_abs_change"] = mean_abs_change(originals, noise, eps)
    change["ratio_modified_to_noise"] = (change["modified_mean_abs_change"]
                                         / change["noise_mean_abs_change"]
                                         if change["noise_mean_abs_change"] > 0 else 0.0)
    out = {"diagnostics_version": DIAGNOSTICS_VERSION, "dataset": data.name,
           "images": int(num_images), "seed": int(seed), "eps": float(eps),
           "m": {**spread(m), "saturated_fraction": saturated_fraction(m),
                 "saturation_threshold": SATURATION},
           "visible_m": visible_spread(originals, m, eps),
           "factor_sensitivity": factor_sensitivity(m, stepped, names),
           "scalar": scalar_section(network, data, np.random.default_rng([int(seed), 10])),
           "change": change}
    out["minimum_effect"] = minimum_effect(out)
    return out


def load_manipulation_artefact(directory, source: str | None = None) -> tuple:
    """(dataset, m(w) network, metadata) of the manipulation artefact in `directory`
    (weights checked against their SHA-256), the dataset from `source` (default: the
    source recorded in its metadata, else 'auto'), reduced to the artefact's fixed factors
    when it records some. ArtefactError for other kinds."""
    from perturbations import artefact

    metadata = artefact.read_metadata(directory)
    if metadata["kind"] != "manipulation":
        raise artefact.ArtefactError(f"perturbation artefact {directory}: diagnostics are "
                                     f"for kind 'manipulation', found {metadata['kind']!r}")
    data = artefact.artefact_dataset(metadata, source)
    return data, artefact.load_manipulation_network(data, directory, metadata), metadata


def artefact_diagnostics(directory, num_images: int = DEFAULT_IMAGES, seed: int = 0,
                         source: str | None = None) -> dict:
    """`manipulation_diagnostics` of the manipulation artefact in `directory` at its eps."""
    data, network, metadata = load_manipulation_artefact(directory, source)
    return manipulation_diagnostics(data, network, metadata["eps"], num_images, seed)


def summary_lines(diagnostics: dict) -> list[str]:
    """The key numbers as short lines of text (figure panel, command output)."""
    m, change = diagnostics["m"], diagnostics["change"]
    lines = [f"images: {diagnostics['images']}, eps {diagnostics['eps']:g}",
             f"mean |m| {m['mean_abs']:.3f}, std of m across images "
             f"{m['std_across_images']:.4f}",
             f"energy: image-independent {m['image_independent_share']:.1%}, "
             f"w-dependent {m['w_dependent_share']:.1%}"
             + (f" (visible in the images: {diagnostics['visible_m']['w_dependent_share']:.1%})"
                if diagnostics.get("visible_m") else ""),
             f"saturated pixels (|m| > {SATURATION:g}): {m['saturated_fraction']:.1%}",
             f"mean |x' - x| {change['modified_mean_abs_change']:.4f} vs noise arm "
             f"(eps {change['noise_eps']:g}) {change['noise_mean_abs_change']:.4f}"
             + (f", at eps {diagnostics['eps']:g} "
                f"{change['noise_at_artefact_eps_mean_abs_change']:.4f}"
                if "noise_at_artefact_eps_mean_abs_change" in change else "")]
    scalar = diagnostics.get("scalar")
    if scalar:
        q = scalar["quantiles"]
        lines += [f"s = a.w + b: median {q['p50']:.3g}, std {scalar['std']:.3g}, "
                  f"range [{q['p0']:.3g}, {q['p100']:.3g}]",
                  f"m change over observed s range {scalar['mean_abs_change_over_range']:.4f}"
                  f", over s in [{WIDE_RANGE[0]:g}, {WIDE_RANGE[1]:g}] "
                  f"{scalar['wide_range']['mean_abs_change']:.4f}"]
    sensitivity = diagnostics["factor_sensitivity"]
    lines.append("per-factor step |dm|: " + ", ".join(
        f"{k} {v:.3g}" for k, v in sensitivity["absolute"].items())
        + f" (random pair {sensitivity['pair_spread']:.3g})")
    effect = diagnostics["minimum_effect"]
    if effect["below_minimum"]:
        lines += ["BELOW MINIMUM EFFECT:"] + [f"  {r}" for r in effect["reasons"]]
    return lines


def save_figure(sheet: np.ndarray, labels: list[str], title: str, diagnostics: dict, out
                ) -> pathlib.Path:
    """Writes PNG `out` (temp name, then renamed): the sheet (from preview.tile_rows, e.g.
    original | m(w) | modified rows) with one label per row, beside the key numbers of
    `diagnostics` and a bar chart of the per-factor sensitivity relative to the random-pair
    spread. matplotlib through Figure only: the caller's backend is kept."""
    from matplotlib.figure import Figure

    dpi = 100
    sheet_w = sheet.shape[1] / dpi * 2
    sheet_h = sheet.shape[0] / dpi * 2
    panel_w = 6.0
    width, height = 2.0 + sheet_w + panel_w, max(sheet_h, 6.0) + 0.8
    fig = Figure(figsize=(width, height), dpi=dpi)
    ax = fig.add_axes([2.0 / width, (height - 0.7 - sheet_h) / height, sheet_w / width,
                       sheet_h / height])
    cell = sheet.shape[0] / len(labels)
    ax.imshow(np.clip(sheet, 0.0, 1.0), interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([(i + 0.5) * cell for i in range(len(labels))], labels)
    ax.tick_params(length=0)
    left = (2.0 + sheet_w + 0.3) / width
    below = diagnostics["minimum_effect"]["below_minimum"]
    fig.text(left, 1 - 0.75 / height, "\n".join(summary_lines(diagnostics)), va="top",
             ha="left", fontsize=8, family="monospace", wrap=True,
             color="firebrick" if below else "black")
    plot_left, plot_width = left + 1.0 / width, (panel_w - 1.6) / width
    scalar = diagnostics.get("scalar")
    if scalar:
        profile = fig.add_axes([plot_left, 0.42, plot_width, 0.15])
        change = scalar["mean_abs_change_from_median"]
        quantiles = [scalar["quantiles"][k] for k in change]
        profile.plot(quantiles, list(change.values()), marker="o", color="darkorange")
        profile.set_xlabel("s at its quantiles p0 ... p100 over the dataset", fontsize=8)
        profile.set_ylabel("mean |m(s) - m(median s)|", fontsize=7)
        profile.set_title("m along the one-neuron scalar s", fontsize=9)
        profile.tick_params(labelsize=7)
    bars = fig.add_axes([plot_left, 0.07, plot_width, 0.25])
    relative = diagnostics["factor_sensitivity"]["relative"]
    bars.barh(list(relative), list(relative.values()), color="steelblue")
    bars.invert_yaxis()
    bars.set_xlabel("step |dm| / random-pair |dm|", fontsize=8)
    bars.set_title("per-factor sensitivity of m (random-pair |dm| "
                   f"{diagnostics['factor_sensitivity']['pair_spread']:.3g})", fontsize=9)
    bars.tick_params(labelsize=7)
    fig.suptitle(title, y=1 - 0.2 / height, fontsize=12)
    out_path = pathlib.Path(out)
    with atomic_path(out_path, ".png") as tmp:
        fig.savefig(tmp, format="png")
    return out_path


def merge_evidence(directory, updates: dict) -> pathlib.Path:
    """Sets the top-level keys `updates` in DIRECTORY/evidence.json (created if absent;
    other keys kept); atomic write."""
    path = pathlib.Path(directory) / EVIDENCE
    evidence = json.loads(path.read_text()) if path.is_file() else {}
    if not isinstance(evidence, dict):
        raise ValueError(f"{path}: expected a JSON object, found {type(evidence).__name__}")
    write_json(path, {**evidence, **updates})
    return path


def write_evidence(directory, diagnostics: dict) -> pathlib.Path:
    """Merges `diagnostics` into DIRECTORY/evidence.json as "diagnostics", plus a
    top-level "below_minimum_effect" flag (`merge_evidence`)."""
    return merge_evidence(directory, {
        "diagnostics": diagnostics,
        "below_minimum_effect": diagnostics["minimum_effect"]["below_minimum"]})
