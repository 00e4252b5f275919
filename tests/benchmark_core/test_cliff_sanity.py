import json

import numpy as np
import pytest

from benchmark.studies import cliff_sanity
from tests.cli import python_m


def test_factors_have_axis_aligned_cliffs_and_the_experiment_runs():
    z = cliff_sanity.sample_factors(20000, np.random.default_rng(0))
    counts, _ = np.histogram(z[:, 0], bins=8, range=(-1, 1))
    # piecewise-constant density: pairs of bins share a level, levels jump at the cliffs
    shares = counts / counts.sum()
    np.testing.assert_allclose(shares, np.repeat(cliff_sanity.STEP_WEIGHTS, 2) / 2, atol=0.01)
    assert abs(np.corrcoef(z.T)[0, 1]) < 0.03                  # independent factors
    result = cliff_sanity.run(seeds=1, steps=3, samples=300)
    for method in ("cliff", "ae"):
        assert 0.0 <= result["mcc_spearman"][method]["mean"] <= 100.0


@pytest.mark.slow
def test_the_command_runs_as_a_user_calls_it(tmp_path):
    out = tmp_path / "cliff.json"
    result = python_m("benchmark.cliff_sanity", "--seeds=1", "--steps=3", "--samples=300",
                   f"--out={out}")
    assert result.returncode == 0, result.stderr[-2000:]
    assert 0.0 <= json.loads(out.read_text())["mcc_spearman"]["cliff"]["mean"] <= 100.0
