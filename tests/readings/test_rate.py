"""benchmark/readings/rate.py on studies it writes: the KL is the runs' own, N the product of
the free factors' sizes, only the original data's runs count, and a directory without such
runs or with a run that names no factor sizes is one error."""

import json
import math

import pytest

from benchmark.readings import ReadingError
from benchmark.readings import rate
from tests.cli import python_m


def _run(study, name, kl, sizes=(6, 32), variant="original", model="beta_vae"):
    run = study / "runs" / name
    run.mkdir(parents=True)
    scalars = {} if kl is None else {"loss/kl": kl}
    (run / "results.json").write_text(json.dumps({
        "model": model, "scalars": scalars, "dataset": {"factor_sizes": list(sizes)},
        "hyperparameters": {"data.variant": variant}}))


def test_the_rate_is_the_mean_kl_over_log_n_of_the_original_runs(tmp_path):
    study = tmp_path / "screen"
    _run(study, "b1", 5.0)
    _run(study, "b2", 6.0)
    _run(study, "b3", 40.0, variant="wave@0.3")          # another arm: not read
    _run(study, "ae1", None, model="ae")                 # no KL: not read
    found = python_m("benchmark.readings", "rate", str(study))
    assert found.returncode == 0, found.stderr[-2000:]
    assert "| screen | beta_vae | 2 | 5.50 [5.00, 6.00] | 192 | 5.26 | 1.05 |" in found.stdout
    (row,) = rate.study_rates(study)
    assert row["ratio"] == pytest.approx(5.5 / math.log(192))


def test_no_kl_runs_bad_sizes_and_no_arguments_are_refused(tmp_path):
    empty = tmp_path / "empty"
    _run(empty, "ae1", None, model="ae")
    with pytest.raises(ReadingError, match="found none"):
        rate.study_rates(empty)
    bad = tmp_path / "bad"
    _run(bad, "b1", 5.0, sizes=())
    with pytest.raises(ReadingError, match="factor_sizes"):
        rate.study_rates(bad)
    mixed = tmp_path / "mixed"
    _run(mixed, "b1", 5.0)
    _run(mixed, "b2", 5.0, sizes=(32, 32))
    with pytest.raises(ReadingError, match="differ in their number of images"):
        rate.study_rates(mixed)
    refused = python_m("benchmark.readings", "rate")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
