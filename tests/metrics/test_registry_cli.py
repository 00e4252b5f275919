import json
import os
import subprocess
import sys

import numpy as np
import pytest

from benchmark.data import dsprites
from benchmark.metrics import METRICS, evaluate, evaluate_codes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _sample(n=900, seed=0):
    rng = np.random.default_rng(seed)
    f = np.stack([rng.integers(0, s, n) for s in (3, 4, 5)], axis=1)
    return f, f + rng.normal(0, 0.05, f.shape)


def test_one_entry_per_metric_holds_both_levels_and_its_source():
    import inspect
    for name, entry in METRICS.items():
        assert callable(entry.configurable) and callable(entry.from_codes) and entry.paper, name
        parameters = list(inspect.signature(entry.configurable).parameters)
        assert parameters[:3] == ["data", "representation_fn", "rng"], name
        settings = set(parameters[3:])
        assert set(entry.sampling) | set(entry.execution_only) | set(entry.fixed) \
            | set(entry.choices) <= settings, name


def test_evaluate_codes_is_seeded_and_metric_independent():
    f, z = _sample()
    names = ["mig", "sap", "infomec"]
    a = evaluate_codes(f, z, seed=3, names=names)
    b = evaluate_codes(f, z, seed=3, names=["infomec", "mig", "sap"])
    assert a == b
    with pytest.raises(ValueError, match="unknown metric"):
        evaluate_codes(f, z, names=["mgi"])


def test_dataset_level_metrics_on_a_perfect_dsprites_code():
    data = dsprites.DSprites(source="procedural")
    pending = []
    sample_factors = data.sample_factors

    def recording_sampler(n, rng):
        pending.append(sample_factors(n, rng))
        return pending[-1]

    def perfect(images):
        """The factors behind the images rendered since the last call, in order."""
        factors = np.concatenate(pending)
        assert len(factors) == len(images)
        pending.clear()
        return factors.astype(float)

    data.sample_factors = recording_sampler
    out = evaluate(data, perfect, seed=0, names=["mig"])
    assert out["mig"]["mig"] > 0.7      # orientation/positions exceed MIG's 20 bins
    assert set(METRICS) >= {"mig", "dci", "sap", "factor_vae_score", "beta_vae_score",
                             "modularity_explicitness", "infomec", "unsupervised"}


def _cli(*args):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run([sys.executable, "-m", "benchmark.metrics", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_cli_evaluate_writes_json(tmp_path):
    f, z = _sample()
    path = tmp_path / "codes.npz"
    np.savez(path, factors=f, codes=z)
    out = tmp_path / "scores.json"
    result = _cli("evaluate", f"--codes={path}", "--metrics=mig,infomec", f"--out={out}")
    assert result.returncode == 0, result.stderr
    scores = json.loads(out.read_text())
    assert scores["schema_version"] == 1 and scores["num_samples"] == 900
    assert scores["metrics"]["mig"]["mig"] > 0.9


@pytest.mark.parametrize("arrays, message", [
    ({"factors": np.zeros((50, 2), int)}, "expected an .npz with the arrays 'factors', 'codes', found"),
    ({"factors": np.zeros((50, 2), int), "codes": np.zeros((50, 3))}, "single value"),
    ({"factors": np.arange(100).reshape(50, 2), "codes": np.full((50, 3), np.nan)}, "NaN"),
])
def test_cli_errors(tmp_path, arrays, message):
    path = tmp_path / "codes.npz"
    np.savez(path, **arrays)
    result = _cli("evaluate", f"--codes={path}", "--metrics=mig")
    assert result.returncode == 2 and message in result.stderr


def test_cli_rejects_pickles_and_garbage(tmp_path):
    path = tmp_path / "codes.npz"
    np.savez(path, factors=np.array([object()] * 3, dtype=object), codes=np.zeros((3, 2)))
    assert "codes.npz" in _cli("evaluate", f"--codes={path}").stderr
    garbage = tmp_path / "g.npz"
    garbage.write_bytes(b"nope")
    result = _cli("evaluate", f"--codes={garbage}")
    assert result.returncode == 2 and "g.npz" in result.stderr


def test_a_metric_undefined_on_a_collapsed_code_is_recorded_not_defaulted():
    from benchmark.metrics.codes import MetricInputError
    data = dsprites.DSprites(source="procedural")

    def collapsed(images):                     # every dim constant (a collapsed posterior)
        return np.zeros((len(images), 4), np.float32)

    with pytest.raises(MetricInputError, match="constant"):
        evaluate(data, collapsed, seed=0, names=["infomec"])
    scores = evaluate(data, collapsed, seed=0, names=["infomec", "mig"], record_errors=True)
    assert set(scores["infomec"]) == {"error"} and "constant" in scores["infomec"]["error"]
    assert scores["mig"]["mig"] == 0.0         # defined: a constant code carries no information
