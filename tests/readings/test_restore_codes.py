"""`benchmark.readings.restore_codes` on tiny run directories written here: an identical
retrain's codes are copied; a differing or missing retrain is named and nothing copied."""

import json
import pathlib

import numpy as np
import pytest

from benchmark.readings import restore_codes
from tests.cli import python_m

RUN = "beta_vae_dsprites_original_seed0"


def write_run(study: pathlib.Path, name: str = RUN, loss: float = 1.5,
              codes: bool = False, array=None) -> pathlib.Path:
    """A finished run under study/runs/name: fingerprint, results.json scalars, curves,
    arrays.npz and, with `codes`, eval_codes.npz."""
    run = study / "runs" / name
    run.mkdir(parents=True)
    (run / "fingerprint.json").write_text(json.dumps({"fingerprint": "abc", "seed": 0}))
    (run / "results.json").write_text(json.dumps({
        "scalars": {"loss": loss, "mig": 0.1}, "written_at": str(run)}))
    (run / "curves.json").write_text(json.dumps({"loss": [[100, 2.0], [200, loss]]}))
    np.savez(run / "arrays.npz", mean=np.arange(6, dtype=np.float32).reshape(2, 3) if
             array is None else array, factors=np.array([0, 1]))
    if codes:
        np.savez(run / "eval_codes.npz", codes=np.full((4, 2), 0.5, np.float32))
    return run


def test_an_identical_retrain_has_its_codes_copied(tmp_path):
    published = write_run(tmp_path / "study")
    retrain = write_run(tmp_path / "retrain", codes=True)
    assert restore_codes.restore(tmp_path / "study", tmp_path / "retrain") == {
        RUN: "codes copied"}
    assert (published / "eval_codes.npz").read_bytes() == (
        retrain / "eval_codes.npz").read_bytes()
    assert sorted(p.name for p in published.iterdir()) == [
        "arrays.npz", "curves.json", "eval_codes.npz", "fingerprint.json", "results.json"]
    assert restore_codes.restore_run(retrain, published) == "codes already there"


@pytest.mark.parametrize("change, named", [
    ({"loss": 1.5000001}, "results.json differs"),
    ({"array": np.arange(6, dtype=np.float64).reshape(2, 3)}, "arrays.npz differs in"),
    ({"array": np.array([[0, 1, 2], [3, 4, np.nan]], np.float32)}, "arrays.npz differs in"),
])
def test_a_differing_retrain_is_named_and_nothing_copied(tmp_path, change, named):
    published = write_run(tmp_path / "study")
    write_run(tmp_path / "retrain", codes=True, **change)
    outcome = restore_codes.restore(tmp_path / "study", tmp_path / "retrain")[RUN]
    assert "DIFFERS" in outcome and named in outcome and "nothing copied" in outcome
    assert not (published / "eval_codes.npz").exists()


def test_differences_in_fingerprint_curves_or_files_are_named(tmp_path):
    published = write_run(tmp_path / "study")
    retrain = write_run(tmp_path / "retrain", codes=True)
    (retrain / "curves.json").write_text(json.dumps({"loss": [[100, 2.0]]}))
    assert restore_codes.difference(retrain, published) == "curves.json differs"
    # curves.json is written only with run.eval_every: neither run having one is no
    # difference, one of them having it is
    (retrain / "curves.json").unlink()
    assert restore_codes.difference(retrain, published) == "the retrain has no curves.json"
    (published / "curves.json").unlink()
    assert restore_codes.difference(retrain, published) is None
    (retrain / "fingerprint.json").write_text("{")
    assert "retrain's fingerprint.json is unreadable" in restore_codes.difference(
        retrain, published)
    (retrain / "fingerprint.json").unlink()
    assert restore_codes.difference(retrain, published) == "the retrain has no fingerprint.json"


def test_nan_in_both_runs_is_identical():
    a = np.array([1.0, np.nan], np.float32)
    assert restore_codes.same_array(a, a.copy())
    assert not restore_codes.same_array(a, a.astype(np.float64))


def test_a_missing_or_unfinished_retrain_is_named(tmp_path):
    write_run(tmp_path / "study")
    write_run(tmp_path / "retrain")                                   # no eval_codes.npz
    write_run(tmp_path / "retrain", name="other_run", codes=True)     # not published
    outcomes = restore_codes.restore(tmp_path / "study", tmp_path / "retrain")
    assert "no eval_codes.npz" in outcomes[RUN]
    assert "not in the published study" in outcomes["other_run"]
    assert not list((tmp_path / "study").rglob("eval_codes.npz"))


def test_the_arguments_must_be_two_studies(tmp_path):
    with pytest.raises(restore_codes.RestoreError, match="expected two arguments, found 1"):
        restore_codes.main([str(tmp_path)])
    with pytest.raises(restore_codes.RestoreError, match="RETRAIN_DIR .* is no directory"):
        (tmp_path / "runs").mkdir()
        restore_codes.main([str(tmp_path), str(tmp_path / "nothing")])


@pytest.mark.slow
def test_the_command_copies_the_identical_and_names_the_rest(tmp_path):
    write_run(tmp_path / "study")
    write_run(tmp_path / "study", name="differs")
    write_run(tmp_path / "retrain", codes=True)
    write_run(tmp_path / "retrain", name="differs", loss=9.0, codes=True)
    shown = python_m("benchmark.readings", "restore_codes", "study", "retrain",
                     cwd=tmp_path, timeout=300)
    assert shown.returncode == 2
    assert f"{RUN}: codes copied" in shown.stdout
    assert "differs: the retrain DIFFERS" in shown.stdout
    lines = shown.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith("found 1 not restored (nothing of them "
                                                 "copied): differs"), shown.stderr
    assert (tmp_path / "study" / "runs" / RUN / "eval_codes.npz").is_file()
    assert not (tmp_path / "study" / "runs" / "differs" / "eval_codes.npz").exists()
