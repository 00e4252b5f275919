"""A run on a materialised variant (memory or disk cache) gives the numbers of the same
run rendered per batch (`materialize.mode = 'off'`, the runner before materialisation),
bit for bit, under the same fingerprint."""

import json

import numpy as np
import pytest

from tests.benchmark_core.test_run import BETA_VAE, ROOT, TINY, _run

ARTEFACT = ROOT / "results" / "perturbations" / "dsprites_ellipse3_diagonal"
ELLIPSE3_MODIFIED = [
    "--gin_bindings=data.fixed_factors = {'orientation': 0, 'shape': 1}",
    "--gin_bindings=data.variant = 'modified'",
    f"--gin_bindings=data.artefact = '{ARTEFACT}'",
    "--gin_bindings=run.steps = 30", "--gin_bindings=run.checkpoint_every = 10",
    "--gin_bindings=run.figures = False"]


@pytest.mark.slow
def test_materialised_runs_equal_the_per_batch_run_bit_for_bit(tmp_path):
    cache = tmp_path / "cache"
    outs = {}
    for mode in ("off", "memory", "disk"):
        outs[mode] = tmp_path / mode
        done = _run(*BETA_VAE, *TINY, *ELLIPSE3_MODIFIED,
                    f"--gin_bindings=materialize.mode = '{mode}'",
                    f"--gin_bindings=materialize.cache_dir = '{cache}'",
                    f"--output_dir={outs[mode]}")
        assert done.returncode == 0, done.stderr[-2000:]
        if mode != "off":
            assert f"in {mode} (101 MB, float32)" in done.stderr
    results = {m: json.loads((d / "results.json").read_text()) for m, d in outs.items()}
    assert len({r["fingerprint"] for r in results.values()}) == 1
    reference = results["off"]
    assert reference["dataset"]["variant"] == "modified" and reference["steps"] == 30
    for mode in ("memory", "disk"):
        assert results[mode]["scalars"] == reference["scalars"], mode
        assert results[mode].get("final_losses") == reference.get("final_losses"), mode
        for name in ("eval_codes.npz", "arrays.npz"):
            with np.load(outs["off"] / name) as a, np.load(outs[mode] / name) as b:
                assert a.files == b.files
                for key in a.files:
                    np.testing.assert_array_equal(a[key], b[key], err_msg=f"{mode} {key}")
    assert len(list(cache.glob("*.npy"))) == 1 and len(list(cache.glob("*.json"))) == 1
