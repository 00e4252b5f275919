"""benchmark/readings/paired_seeds.py on a study it assembles from published runs: the
per-seed drops are scipy's paired t on the runs' own scores, seeds without a partner are
left out, an arm with fewer than two pairs is a row that says so, and two runs of one
seed in one arm are one error."""

import json
import shutil

import numpy as np
import pytest
import scipy.stats as sp

from benchmark.readings import ReadingError
from benchmark.readings import paired_seeds
from tests.cli import ROOT, python_m

PUBLISHED = ROOT / "results" / "naive_move_ellipse_cpu" / "runs"


def _study(root, runs):
    for name in runs:
        shutil.copytree(PUBLISHED / name, root / "runs" / name,
                        ignore=shutil.ignore_patterns("checkpoints", "tb", "*.npz", "*.png"))
    return root


def _mig(name):
    return json.loads((PUBLISHED / name / "results.json").read_text())["scalars"]["metric/mig"]


def test_each_arm_is_read_against_the_original_seed_by_seed(tmp_path):
    originals = [f"beta_vae_dsprites_original_seed{s}" for s in (20, 21, 22, 23)]
    naives = [f"beta_vae_dsprites_naive@1_seed{s}" for s in (20, 21, 22)]     # 23: no pair
    study = _study(tmp_path / "s", [*originals, *naives, "ae_dsprites_original_seed20"])
    found = python_m("benchmark.readings", "paired_seeds", str(study))
    assert found.returncode == 0, found.stderr[-2000:]
    rows = json.loads((study / "paired_seeds.json").read_text())["rows"]
    mig = next(r for r in rows if r["arm"] == "naive@1" and r["metric"] == "MIG")
    a = [_mig(n) for n in originals[:3]]
    b = [_mig(n) for n in naives]
    assert mig["n"] == 3 and mig["seeds"] == [20, 21, 22]
    assert mig["drop"] == pytest.approx(np.mean(np.subtract(a, b)))
    assert mig["p"] == pytest.approx(sp.ttest_rel(a, b, alternative="greater").pvalue)
    assert mig["correlation"] == pytest.approx(np.corrcoef(a, b)[0, 1])
    assert "| naive@1 | MIG | 3 |" in found.stdout
    assert {r["arm"] for r in rows} == {"naive@1"}           # the AE is another model


def test_two_runs_of_one_seed_and_a_missing_original_are_refused(tmp_path):
    study = _study(tmp_path / "s", ["beta_vae_dsprites_naive@1_seed20",
                                    "beta_vae_dsprites_naive@1_seed21"])
    with pytest.raises(ReadingError, match="no kept original runs"):
        paired_seeds.main([str(study)])
    records = [{"model": "beta_vae", "variant": "naive@1", "seed": 20, "overpruned": False,
                "setting": "", "values": {"MIG": 0.1}}] * 2
    with pytest.raises(ReadingError, match="two kept runs of seed 20"):
        paired_seeds.seed_values(records, "beta_vae")
    refused = python_m("benchmark.readings", "paired_seeds")
    assert refused.returncode == 2


def test_an_arm_with_one_pair_is_a_row_that_says_so():
    values = {"original": {"MIG": {0: 0.5, 1: 0.4}}, "noisy": {"MIG": {1: 0.3, 7: 0.2}}}
    (row,) = paired_seeds.paired_rows(values)
    assert row["drop"] is None and row["n"] == 1
    assert row["untestable"].startswith("1 shared seed(s)")
    assert "| noisy | MIG | 1 | 1 shared seed(s): no paired test |" in "\n".join(
        paired_seeds.table_lines([row], "beta_vae"))
