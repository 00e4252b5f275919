"""python -m benchmark.metrics evaluate --codes=FILE.npz [--metrics=mig,dci,...] [--out=F.json]

Scores any representation saved as an npz with two arrays: `factors` (n, k) integer
classes of the ground-truth factors and `codes` (n, d) float codes of the same n images,
drawn uniformly from the dataset. Files are data: loaded with allow_pickle=False.
"""

from __future__ import annotations

import json
import sys

import numpy as np
from absl import app, flags

from benchmark.atomic import atomic_path
from benchmark.metrics import METRICS, MetricInputError, evaluate_codes

SCHEMA_VERSION = 1

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command, so that
    importing this module next to another command's flags never clashes)."""
    flags.DEFINE_string("codes", None, "npz with arrays 'factors' (n, k) and 'codes' (n, d).")
    flags.DEFINE_list("metrics", list(METRICS), "Metrics to compute.")
    flags.DEFINE_string("out", None, "Write the scores as JSON here (atomically).")
    flags.DEFINE_integer("seed", 0, "Seed of the metrics' randomness.")


def load_codes(path: str) -> tuple[np.ndarray, np.ndarray]:
    """(factors, codes) from an npz; ValueError naming the file when it is not one.

    Truncated or corrupt archives fail in the zip layer (BadZipFile), the deflate stream
    (zlib.error), the .npy header (ValueError, SyntaxError, TokenError) or the array body
    (ValueError, EOFError): each becomes one ValueError naming the file.
    """
    import tokenize
    import zipfile
    import zlib

    read_errors = (OSError, EOFError, KeyError, SyntaxError, MemoryError,
                   zipfile.BadZipFile, zlib.error, tokenize.TokenError)
    try:
        with np.load(path, allow_pickle=False) as npz:
            missing = [k for k in ("factors", "codes") if k not in npz.files]
            if missing:
                raise ValueError(f"{path}: expected arrays 'factors' and 'codes', found "
                                 f"{npz.files}")
            return npz["factors"], npz["codes"]
    except read_errors as error:
        raise ValueError(f"{path}: could not read an npz file (truncated or corrupt?): "
                         f"{type(error).__name__}: {error}") from error
    except ValueError as error:
        if str(error).startswith(str(path)):
            raise
        raise ValueError(f"{path}: expected plain arrays 'factors' and 'codes': {error}"
                         ) from error


def main(argv):
    if len(argv) != 2 or argv[1] != "evaluate":
        raise app.UsageError(f"expected the command 'evaluate', found {' '.join(argv[1:]) or 'none'}")
    if not FLAGS.codes:
        raise app.UsageError("--codes is required")
    try:
        factors, codes = load_codes(FLAGS.codes)
        scores = evaluate_codes(factors, codes, FLAGS.seed, FLAGS.metrics)
    except (ValueError, MetricInputError) as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    result = {"schema_version": SCHEMA_VERSION, "codes_file": FLAGS.codes, "seed": FLAGS.seed,
              "num_samples": int(len(codes)), "num_factors": int(factors.shape[1]),
              "code_dims": int(codes.shape[1]), "metrics": scores}
    for name, values in scores.items():
        shown = ", ".join(f"{k}={v:.4f}" for k, v in values.items()
                          if isinstance(v, (int, float)) and not isinstance(v, bool))
        print(f"{name:24s} {shown}")
    if FLAGS.out:
        with atomic_path(FLAGS.out, ".json") as tmp:
            tmp.write_text(json.dumps(result, indent=2))
        print(f"wrote {FLAGS.out}")


if __name__ == "__main__":
    define_flags()
    app.run(main)
