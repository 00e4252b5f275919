"""Preview sheets: random samples plus one traversal row per factor, saved as PNG."""

from __future__ import annotations

import pathlib

import numpy as np

from benchmark.atomic import atomic_path

from benchmark.data.ground_truth import GroundTruthData


def traversal_factors(data: GroundTruthData, base: np.ndarray, factor: int, columns: int
                      ) -> np.ndarray:
    """`base` (k,) with factor `factor` swept over up to `columns` evenly spaced classes."""
    size = data.factor_sizes[factor]
    classes = np.unique(np.round(np.linspace(0, size - 1, min(columns, size))).astype(int))
    rows = np.repeat(base[None, :], len(classes), axis=0)
    rows[:, factor] = classes
    return rows


def preview_sheet(data: GroundTruthData, rng: np.random.Generator, columns: int = 10,
                  sample_rows: int = 3) -> tuple[np.ndarray, list[str]]:
    """(sheet float32 (rows*66, columns*66, 3) in [0, 1], one label per row).

    The first `sample_rows` rows are random samples, then one row per factor traversing
    it from a random base point (classes evenly spaced; all of them when they fit).
    """
    tiles, labels = [], []
    for r in range(sample_rows):
        tiles.append(data.observations_from_factors(data.sample_factors(columns, rng), rng))
        labels.append("random samples" if r == 0 else "")
    base = data.sample_factors(1, rng)[0]
    for j, name in enumerate(data.factor_names):
        tiles.append(data.observations_from_factors(
            traversal_factors(data, base, j, columns), rng))
        labels.append(f"{name} ({data.factor_sizes[j]})")
    pad = 1
    cell = data.observation_shape[0] + 2 * pad
    sheet = np.ones((len(tiles) * cell, columns * cell, 3), dtype=np.float32) * 0.5
    for r, row in enumerate(tiles):
        for c, img in enumerate(row):
            rgb = np.repeat(img, 3, axis=-1) if img.shape[-1] == 1 else img
            sheet[r * cell + pad:(r + 1) * cell - pad, c * cell + pad:(c + 1) * cell - pad] = rgb
    return sheet, labels


def save_preview(data: GroundTruthData, out: str, seed: int = 0, title: str | None = None
                 ) -> pathlib.Path:
    """Renders a preview sheet of `data` to PNG `out` (temp name, then renamed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sheet, labels = preview_sheet(data, np.random.default_rng(seed))
    cell = sheet.shape[0] / len(labels)
    dpi = 100
    width = sheet.shape[1] / dpi * 2 + 2.0
    height = sheet.shape[0] / dpi * 2 + 0.6
    fig = plt.figure(figsize=(width, height), dpi=dpi)
    ax = fig.add_axes([2.0 / width, 0.05 / height, 1 - 2.05 / width, 1 - 0.6 / height])
    ax.imshow(sheet, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([(i + 0.5) * cell for i in range(len(labels))], labels)
    ax.tick_params(length=0)
    fig.suptitle(title or str(data.describe().get("name")), y=1 - 0.15 / height, fontsize=12)
    out_path = pathlib.Path(out)
    try:
        with atomic_path(out_path, ".png") as tmp:
            fig.savefig(tmp, format="png")
    finally:
        plt.close(fig)
    return out_path
