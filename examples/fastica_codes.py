"""python examples/fastica_codes.py EXPORT_DIR [--components=2] [--pca=8]

The user's side of an audit from files (`python -m benchmark.audit export` /  `score`,
docs/audit.md): a method that uses no TensorFlow, scikit-learn's FastICA on a PCA of the
pixels, fitted once per arm and seed of the export and written as the codes the score step
reads. A stand-in for a model trained in PyTorch or JAX: only numpy and scikit-learn are
imported, and the export is read as data (no pickle).

Reads EXPORT_DIR/manifest.json; for every arm, reads its images (the dSprites npz layout:
'imgs', (n, 64, 64), grey levels in [0, 1]) and, for every seed, writes
EXPORT_DIR/<codes path of that arm and seed> with one array 'codes', (n, components), row i
the code of image i.
"""

import argparse
import json
import pathlib
import sys

import numpy as np
from sklearn.decomposition import PCA, FastICA


def codes_of(images: np.ndarray, seed: int, components: int = 2, pca: int = 8) -> np.ndarray:
    """(n, components) FastICA codes of a PCA of the flattened images (n, ...) in [0, 1]."""
    flat = images.reshape(len(images), -1).astype(np.float32)
    reduced = PCA(n_components=pca, random_state=seed).fit_transform(flat)
    return FastICA(n_components=components, random_state=seed,
                   max_iter=400).fit_transform(reduced)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export", type=pathlib.Path)
    parser.add_argument("--components", type=int, default=2)
    parser.add_argument("--pca", type=int, default=8)
    args = parser.parse_args(argv)
    manifest = json.loads((args.export / "manifest.json").read_text())
    written = 0
    for arm, entry in manifest["arms"].items():
        with np.load(args.export / entry["file"], allow_pickle=False) as f:
            images = f["imgs"]
        for seed, target in zip(manifest["seeds"], entry["codes"]):
            path = args.export / target
            path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(path, codes=codes_of(images, seed, args.components, args.pca))
            written += 1
    assert "tensorflow" not in sys.modules
    print(f"wrote {written} codes files under {args.export}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
