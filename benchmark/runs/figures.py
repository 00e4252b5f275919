"""Figures of a trained model: reconstructions and latent traversals, as arrays and PNGs.

Model-agnostic: everything goes through two functions of the run,
    representation_fn(images float32 (n, 64, 64, c) in [0, 1]) -> codes (n, d)
    decode_fn(codes (n, d)) -> images float32 (n, 64, 64, c) in [0, 1],
so a method without a decoder (PCL) simply has no such figures.
"""

from __future__ import annotations

import pathlib
from typing import Callable

import numpy as np

from benchmark.data.preview import save_sheet, tile_rows

ImageFn = Callable[[np.ndarray], np.ndarray]


def reconstruction_sheet(images: np.ndarray, representation_fn: ImageFn, decode_fn: ImageFn,
                         columns: int = 10, input_label: str = "input"
                         ) -> tuple[np.ndarray, list[str]]:
    """Alternating rows of the model's inputs (labelled `input_label`, e.g. 'noisy input,
    ε 0.1') and their reconstructions, `columns` per row."""
    rows, labels = [], []
    for start in range(0, len(images), columns):
        inputs = images[start:start + columns]
        rows += [inputs, decode_fn(representation_fn(inputs))]
        labels += [input_label, "reconstruction"]
    return tile_rows(rows), labels


def traversal_ranges(codes: np.ndarray, low: float = 2.0, high: float = 98.0) -> np.ndarray:
    """Per code dim the (low, high) percentiles of its values, (d, 2): the span a
    traversal sweeps, so it stays where the encoder puts data whatever the code's scale."""
    return np.stack([np.percentile(codes, low, axis=0), np.percentile(codes, high, axis=0)],
                    axis=1)


def traversal_sheet(image: np.ndarray, representation_fn: ImageFn, decode_fn: ImageFn,
                    ranges: np.ndarray, steps: int = 9, order=None,
                    dim_labels=None) -> tuple[np.ndarray, list[str]]:
    """One row per code dim (in `order`): the code of `image` (64, 64, c) with that dim swept
    evenly over its range (d, 2), decoded. Row labels from `dim_labels` (default 'z<i>')."""
    base = np.asarray(representation_fn(image[None]))[0]
    order = range(len(base)) if order is None else order
    rows, labels = [], []
    for dim in order:
        codes = np.repeat(base[None, :], steps, axis=0)
        codes[:, dim] = np.linspace(ranges[dim, 0], ranges[dim, 1], steps)
        rows.append(decode_fn(codes.astype(np.float32)))
        labels.append(dim_labels[dim] if dim_labels is not None else f"z{dim}")
    return tile_rows(rows), labels


def input_label(description: dict) -> str:
    """The label of a dataset's images in a figure: 'input' for original data, else the
    variant and its strength ('noisy input, ε 0.1'), so a perturbed input is never read as
    the original image."""
    variant = description.get("variant", "original")
    if variant == "original":
        return "input"
    eps = description.get("eps")
    return f"{variant} input" + (f", ε {eps:g}" if isinstance(eps, (int, float)) else "")


def write_model_figures(out_dir, images: np.ndarray, codes: np.ndarray,
                        representation_fn: ImageFn, decode_fn: ImageFn, title: str,
                        posterior_variance=None, input_label: str = "input"
                        ) -> list[pathlib.Path]:
    """reconstructions.png (the first 20 `images`) and traversals.png (from images[0],
    ranges from the evaluation `codes` (n, d)); dims ordered by mean posterior variance,
    most informative first, when `posterior_variance` (d,) is given (paper 002 sec. 4.4);
    the input rows are labelled `input_label` (`input_label(description)`)."""
    out_dir = pathlib.Path(out_dir)
    sheet, labels = reconstruction_sheet(images[:20], representation_fn, decode_fn,
                                         input_label=input_label)
    written = [save_sheet(sheet, labels, f"{title}: reconstructions",
                          out_dir / "reconstructions.png")]
    order, dim_labels = None, None
    if posterior_variance is not None:
        variance = np.asarray(posterior_variance, dtype=float)
        order = np.argsort(variance)
        dim_labels = [f"z{i} (E[σ²] {v:.2f})" for i, v in enumerate(variance)]
    sheet, labels = traversal_sheet(images[0], representation_fn, decode_fn,
                                    traversal_ranges(codes), order=order,
                                    dim_labels=dim_labels)
    written.append(save_sheet(sheet, labels, f"{title}: latent traversals (2nd-98th "
                              "percentile of each dim)", out_dir / "traversals.png"))
    return written
