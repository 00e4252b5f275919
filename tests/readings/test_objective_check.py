"""`benchmark.readings.objective_check` on small readaptation results written here: the blind
rule both ways, the power's seeds, a partial result, malformed input, and the command."""

import json
import pathlib

import numpy as np
import pytest

from benchmark.core.errors import UserError
from benchmark.readings import objective_check as oc
from tests.cli import python_m

PNG = b"\x89PNG\r\n\x1a\n"


def run(seed: int, start: float, end: float) -> dict:
    """One seed's result with 3 evaluations: original's gap 0, noise's -0.5 throughout,
    naive@1's gap going start -> end (so its advantage over noise is start + 0.5 at update
    0 and end + 0.5 after the last update); a seed-dependent wobble of 0.01."""
    wobble = 0.01 * seed
    return {"steps": 200, "evaluations": [0, 100, 200],
            "arm_eps": {oc.CONTROL: 0.08},
            "arm_change": {oc.POSITIVE: {"energy_per_image": 9.0, "mean_abs": 0.005,
                                         "linf": 1.0},
                           oc.CONTROL: {"energy_per_image": 9.0, "mean_abs": 0.04,
                                        "linf": 0.08}},
            "arms": {oc.BASE: {"gap": [0.0, 0.0, 0.0]},
                     oc.POSITIVE: {"gap": [start + wobble, (start + end) / 2, end - wobble]},
                     oc.CONTROL: {"gap": [-0.5, -0.5, -0.5 + wobble / 2]}}}


def across(runs: dict) -> dict:
    """A minimal `across_seeds` for `runs` (what the report reads)."""
    arms = oc.arm_readings(runs)
    summary = {"alpha": 0.05, "arms": {}, "preferred": {}}
    for arm, a in arms.items():
        end = np.asarray(a["advantage_end"])
        summary["arms"][arm] = {"mean": float(end.mean()), "ci_low": float(end.min()),
                                "ci_high": float(end.max())}
    test = oc.p1_reading(arms).get("test")
    summary["preferred"][oc.POSITIVE] = {oc.CONTROL: {
        **test, "family": "control", "p_holm": test["p"], "preferred": test["p"] < 0.05}}
    return summary


def write_result(folder: pathlib.Path, start: float, end: float, seeds=(0, 1, 2),
                 partial: bool = False) -> pathlib.Path:
    """readaptation_seeds.json (or only its .partial.json) in `folder`; returns the path."""
    folder.mkdir(parents=True, exist_ok=True)
    runs = {s: run(s, start, end) for s in seeds}
    path = folder / "readaptation_seeds.json"
    stored = {"runs": {str(s): r for s, r in runs.items()}}
    if partial:
        pathlib.Path(f"{path}.partial.json").write_text(json.dumps(stored))
    else:
        path.write_text(json.dumps({**stored, "across_seeds": across(runs)}))
    return path


def test_blind_when_re_adaptation_closes_more_than_half_the_naive_advantage():
    """naive - noise: -6 at update 0 (delta 3), about -0.5 at the end: the 90 % interval
    lies above -3, so the objective is blind to the naive move by the registered rule."""
    runs = {s: run(s, -6.5, -1.0) for s in range(3)}
    p1 = oc.reading(runs)["p1"]
    assert np.allclose(p1["difference_update0"], [-6.0, -5.99, -5.98])
    assert p1["delta"] == pytest.approx(2.995)
    assert p1["test"]["ci_low"] > -p1["delta"] and p1["blind"] is True


def test_not_blind_when_the_naive_advantage_stays():
    """naive - noise stays at -6 after the last update: the interval lies below -delta."""
    runs = {s: run(s, -6.5, -6.5) for s in range(3)}
    p1 = oc.reading(runs)["p1"]
    assert p1["blind"] is False and p1["test"]["ci_high"] < -p1["delta"]
    assert p1["test"]["p"] < 0.05
    assert p1["power_at_observed"] > 0.99 and p1["seeds_for_power_0.8"] == 3


def test_seeds_for_power_never_fewer_than_run_and_none_beyond_the_most():
    assert oc.seeds_for_power(10.0, 1.0, 3) == 3                 # 2 pairs would do
    assert oc.seeds_for_power(0.5, 1.0, 3) == 27                 # stats.pairs_needed's
    assert oc.seeds_for_power(0.01, 1.0, 3) is None              # beyond MOST_SEEDS


def test_one_seed_gives_update_0_but_no_test():
    p1 = oc.reading({0: run(0, -6.5, -1.0)})["p1"]
    assert set(p1) == {"difference_update0", "delta"}


def test_lines_report_and_figure(tmp_path):
    runs = {s: run(s, -6.5, -1.0) for s in range(3)}
    result = {**oc.reading(runs), "partial": False}
    text = oc.lines(result)
    assert text[0] == "seeds [0, 1, 2]" and text[1].startswith(f"  {oc.POSITIVE}: eps None")
    assert text[-1].startswith("  paired power at the observed difference:")
    report = oc.report(result, across(runs), "study/readaptation_seeds.json")
    assert ("Written by `python -m benchmark.readings objective_check study/readaptation_"
            "seeds.json` (seeds [0, 1, 2], 200 decoder updates an arm)") in report
    assert f"| `{oc.CONTROL}` | 0.0800 | 9.00 | 0.0400 | 0.080 |" in report
    assert f"| `{oc.POSITIVE}` | control |" in report and "| 100.0% |" in report
    assert "δ = 2.995" in report and "→ blind: yes." in report
    assert oc.figure(runs, tmp_path / "a.png").read_bytes()[:8] == PNG
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png"]


def test_a_partial_result_is_read_and_nothing_written(tmp_path, capsys):
    path = write_result(tmp_path, -6.5, -1.0, seeds=(0, 1), partial=True)
    oc.main([str(path)])
    assert capsys.readouterr().out.startswith("seeds [0, 1] (partial: finished seeds only)")
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{path.name}.partial.json"]


@pytest.mark.parametrize("content, expected", [
    (None, "expected {path} or {path}.partial.json; found neither"),
    ("{", "{path}: expected a readaptation result (JSON), found JSONDecodeError"),
    ('{"runs": {}}', "{path}: expected 'across_seeds' with 'arms' and 'preferred'"),
    ('{"runs": {"0": {"steps": 1, "evaluations": [0], "arms": {"original": {"gap": []}}}},'
     ' "across_seeds": {"arms": {}, "preferred": {}}}',
     "{path}: expected seed 0, arm 'original': a 'gap' of 1 values"),
    ('{"runs": {"0": {"steps": 1, "evaluations": [0], "arms": {"original": {"gap": [0]}}},'
     ' "1": {"steps": 1, "evaluations": [0], "arms": {"original": {"gap": [0]}, '
     '"x": {"gap": [1]}}}}, "across_seeds": {"arms": {}, "preferred": {}}}',
     "{path}: expected the same arms in every seed, found {{'0': ['original'], '1'")])
def test_missing_or_malformed_input_is_one_user_error_line(tmp_path, content, expected):
    path = tmp_path / "readaptation_seeds.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(UserError) as raised:
        oc.main([str(path)])
    message = str(raised.value)
    assert message.startswith(expected.format(path=path)) and "\n" not in message


def test_wrong_argument_count_is_a_user_error():
    with pytest.raises(UserError, match="usage: python -m benchmark.readings objective_check"):
        oc.main([])


@pytest.mark.slow
def test_the_command_writes_reading_report_and_figure_beside_its_input(tmp_path):
    path = write_result(tmp_path / "study", -6.5, -6.5)
    shown = python_m("benchmark.readings", "objective_check", "study/readaptation_seeds.json",
                     cwd=tmp_path, timeout=300)
    assert shown.returncode == 0, shown.stderr
    assert sorted(p.name for p in path.parent.iterdir()) == [
        "advantage.png", "readaptation_seeds.json", "reading.json", "report.md"]
    written = json.loads((path.parent / "reading.json").read_text())
    assert written["seeds"] == [0, 1, 2] and written["partial"] is False
    assert written["p1"]["blind"] is False
    report = (path.parent / "report.md").read_text()
    assert "blind: False" in shown.stdout and "→ blind: no." in report
    assert "`python -m benchmark.readings objective_check study/readaptation_seeds.json`" in report
    assert (path.parent / "advantage.png").read_bytes()[:8] == PNG
