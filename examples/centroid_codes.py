"""python examples/centroid_codes.py EXPORT_DIR [--threshold=0.5]

A known-answer method for the audit: an encoder invariant by
construction, with no training. Each image is thresholded at 0.5 and its code is the
centroid (row, column) of the pixels at or above it. On the geometry battery every arm
thresholds back to the same sprite: the wave, its texture and the matched noise add at
most eps <= 0.37 to a background pixel (0) and take at most that from a sprite pixel (1),
so the codes are the same on every arm and the method must come out ROBUST. Only numpy is
imported; the export is read as data (no pickle).

Reads EXPORT_DIR/manifest.json and writes, for every arm and seed, the codes file the
manifest names: one array 'codes', (n, 2), row i the centroid of image i. The seeds get
the same codes (the method has no randomness).
"""

import argparse
import json
import pathlib
import sys

import numpy as np


def codes_of(images: np.ndarray, threshold: float = 0.5) -> np.ndarray:
    """(n, 2) float64 centroids (row, column) of the pixels >= threshold of images
    (n, h, w) or (n, h, w, c) in [0, 1] (channels averaged); an image with no such pixel
    gets its centre."""
    images = np.asarray(images, np.float32)
    if images.ndim == 4:
        images = images.mean(axis=-1)
    mask = images >= threshold
    counts = mask.sum(axis=(1, 2)).astype(np.float64)
    rows = np.arange(images.shape[1], dtype=np.float64)
    cols = np.arange(images.shape[2], dtype=np.float64)
    row_sum = (mask.sum(axis=2) * rows).sum(axis=1)
    col_sum = (mask.sum(axis=1) * cols).sum(axis=1)
    empty = counts == 0
    safe = np.where(empty, 1.0, counts)
    centre = [(images.shape[1] - 1) / 2, (images.shape[2] - 1) / 2]
    return np.column_stack([np.where(empty, centre[0], row_sum / safe),
                            np.where(empty, centre[1], col_sum / safe)])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export", type=pathlib.Path)
    parser.add_argument("--threshold", type=float, default=0.5)
    args = parser.parse_args(argv)
    manifest = json.loads((args.export / "manifest.json").read_text())
    written = 0
    for entry in manifest["arms"].values():
        with np.load(args.export / entry["file"], allow_pickle=False) as f:
            codes = codes_of(f["imgs"], args.threshold)
        for target in entry["codes"]:
            path = args.export / target
            path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(path, codes=codes)
            written += 1
    assert "tensorflow" not in sys.modules
    print(f"wrote {written} codes files under {args.export}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
