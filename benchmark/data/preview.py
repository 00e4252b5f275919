"""Preview sheets: random samples plus one traversal row per factor, saved as PNG."""

from __future__ import annotations

import pathlib

import numpy as np

from benchmark.core.atomic import atomic_path

from benchmark.data.ground_truth import GroundTruthData


def traversal_factors(data: GroundTruthData, base: np.ndarray, factor: int, columns: int
                      ) -> np.ndarray:
    """`base` (k,) with factor `factor` swept over up to `columns` evenly spaced classes."""
    size = data.factor_sizes[factor]
    classes = np.unique(np.round(np.linspace(0, size - 1, min(columns, size))).astype(int))
    rows = np.repeat(base[None, :], len(classes), axis=0)
    rows[:, factor] = classes
    return rows


def tile_rows(rows, pad: int = 1) -> np.ndarray:
    """Grid sheet float32 (len(rows) * (h+2pad), columns * (w+2pad), 3) in [0, 1], grey
    background, from rows of images, each (m, h, w, c) with c in {1, 3} and m <= columns."""
    columns = max(len(row) for row in rows)
    height, width = rows[0].shape[1:3]
    cell_h, cell_w = height + 2 * pad, width + 2 * pad
    sheet = np.full((len(rows) * cell_h, columns * cell_w, 3), 0.5, dtype=np.float32)
    for r, row in enumerate(rows):
        for c, img in enumerate(row):
            rgb = np.repeat(img, 3, axis=-1) if img.shape[-1] == 1 else img
            sheet[r * cell_h + pad:(r + 1) * cell_h - pad,
                  c * cell_w + pad:(c + 1) * cell_w - pad] = rgb
    return sheet


def save_sheet(sheet: np.ndarray, labels: list[str], title: str, out) -> pathlib.Path:
    """Writes a sheet (from tile_rows) with one label per row and a title to PNG `out`
    (temp name, then renamed)."""
    from matplotlib.figure import Figure        # no pyplot: the caller's backend is kept

    cell = sheet.shape[0] / len(labels)
    dpi = 100
    width = sheet.shape[1] / dpi * 2 + 2.0
    height = sheet.shape[0] / dpi * 2 + 0.6
    fig = Figure(figsize=(width, height), dpi=dpi)
    ax = fig.add_axes([2.0 / width, 0.05 / height, 1 - 2.05 / width, 1 - 0.6 / height])
    ax.imshow(np.clip(sheet, 0.0, 1.0), interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([(i + 0.5) * cell for i in range(len(labels))], labels)
    ax.tick_params(length=0)
    fig.suptitle(title, y=1 - 0.15 / height, fontsize=12)
    out_path = pathlib.Path(out)
    with atomic_path(out_path, ".png") as tmp:
        fig.savefig(tmp, format="png")
    return out_path


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
    sheet = tile_rows(tiles)
    return sheet, labels


def save_preview(data: GroundTruthData, out: str, seed: int = 0, title: str | None = None
                 ) -> pathlib.Path:
    """Renders a preview sheet of `data` to PNG `out` (temp name, then renamed)."""
    sheet, labels = preview_sheet(data, np.random.default_rng(seed))
    return save_sheet(sheet, labels, title or str(data.describe().get("name")), out)
