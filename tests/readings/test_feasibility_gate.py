"""`benchmark.readings.feasibility_gate` on small curves written here: GO at the first step
meeting (a)-(c), NO-GO when each of them fails somewhere, undecided while points are
missing, malformed curves, and the command."""

import json
import pathlib

import pytest

from benchmark.core.errors import UserError
from benchmark.readings import feasibility_gate as fg
from tests.cli import python_m

PNG = b"\x89PNG\r\n\x1a\n"
STEPS = range(fg.EVERY, fg.LAST_STEP + 1, fg.EVERY)          # 5k, ..., 30k


def point(step: int, mig: float, active: int = 5) -> dict:
    """A curve point as a run writes it (over-pruned below dSprites' 5 factors)."""
    return {"step": step, "metric/mig": mig, "metric/dci/disentanglement": mig / 2,
            "health/active_units": active, "health/overpruned": active < fg.FACTORS}


def curve(migs, active=None) -> dict:
    """{step: point} over the gate's steps 5k, 10k, ... from one MIG (and active dims)
    per step; fewer values give fewer points (a run still training)."""
    active = active or [5] * len(migs)
    return {s: point(s, m, a) for s, m, a in zip(STEPS, migs, active)}


def write_study(root: pathlib.Path, by_seed: dict) -> pathlib.Path:
    """A study directory whose runs' curves.json hold `by_seed` ({seed: {step: point}});
    a seed given None has a run folder but no curves.json yet."""
    for seed, points in by_seed.items():
        run = root / "runs" / fg.RUN.format(seed=seed)
        run.mkdir(parents=True)
        if points is not None:
            (run / "curves.json").write_text(json.dumps({"points": list(points.values())}))
    return root


def test_go_at_the_first_step_meeting_a_b_and_c():
    """Median MIG reaches 0.15 at 15k, the seeds differ by 0.1 there: GO at 15,000 (the
    later passing steps do not matter)."""
    by_seed = {0: curve([0.05, 0.10, 0.20, 0.25, 0.3, 0.3]),
               1: curve([0.04, 0.05, 0.10, 0.15, 0.2, 0.2])}
    out = fg.gate(by_seed)
    assert (out["decision"], out["length"]) == ("go", 15000)
    assert out["steps"]["15000"]["checks"] == {"median_mig": True, "not_overpruned": True,
                                               "seeds_differ": True}
    assert out["steps"]["15000"]["median_mig"] == pytest.approx(0.15)


@pytest.mark.parametrize("failing", ["median_mig", "not_overpruned", "seeds_differ"])
def test_no_go_when_one_criterion_fails_at_every_step(failing):
    """Six steps where two criteria hold and `failing` does not: (a) median MIG 0.10,
    (b) seed 1 has 4 active dims, (c) the seeds' MIGs 0.01 apart."""
    first, second, active = {"median_mig": ([0.13] * 6, [0.07] * 6, None),
                             "not_overpruned": ([0.3] * 6, [0.2] * 6, [4] * 6),
                             "seeds_differ": ([0.30] * 6, [0.29] * 6, None)}[failing]
    out = fg.gate({0: curve(first), 1: curve(second, active)})
    assert (out["decision"], out["length"]) == ("no-go", None)
    for verdict in out["steps"].values():
        assert [k for k, ok in verdict["checks"].items() if not ok] == [failing]


def test_undecided_while_a_step_is_missing_before_one_passes():
    by_seed = {0: curve([0.05, 0.10, 0.12]), 1: curve([0.04, 0.05])}
    out = fg.gate(by_seed)
    assert (out["decision"], out["length"]) == ("undecided", None)
    assert sorted(out["steps"]) == ["10000", "5000"]
    assert out["points_per_seed"] == {"0": [5000, 10000, 15000], "1": [5000, 10000]}


def test_a_step_beyond_the_last_does_not_count():
    late = {s: point(s, 0.5) for s in (35000,)}
    by_seed = {0: {**curve([0.1] * 6), **late}, 1: {**curve([0.1] * 6),
                                                    35000: point(35000, 0.2)}}
    assert fg.decide(fg.verdicts(by_seed)) == ("no-go", None)
    assert fg.verdicts(by_seed)[35000]["passes"] is True


def test_lines_and_figure(tmp_path):
    by_seed = {0: curve([0.05, 0.2]), 1: curve([0.04, 0.1])}
    out = fg.gate(by_seed)
    assert fg.lines(out) == ['{"decision": "go", "length": 10000}',
                             "5000: MIG [0.05, 0.04], active [5, 5], passes False",
                             "10000: MIG [0.2, 0.1], active [5, 5], passes True"]
    assert fg.figure(by_seed, tmp_path / "c.png").read_bytes()[:8] == PNG
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.png"]


def test_runs_without_curves_yet_are_undecided(tmp_path):
    study = write_study(tmp_path, {0: None, 1: None})
    assert fg.curves(study) == {0: {}, 1: {}}
    assert fg.gate(fg.curves(study))["decision"] == "undecided"


@pytest.mark.parametrize("content, expected", [
    ("{", "expected a curves file ({'points': [...]}), found JSONDecodeError"),
    ('{"steps": []}', "expected a curves file ({'points': [...]}), found KeyError"),
    ('{"points": [{"step": 5000, "metric/mig": 0.1}]}', "expected every point to have")])
def test_malformed_curves_are_one_user_error_line(tmp_path, content, expected):
    study = write_study(tmp_path, {0: curve([0.1]), 1: None})
    path = study / "runs" / fg.RUN.format(seed=1) / "curves.json"
    path.write_text(content)
    with pytest.raises(UserError) as raised:
        fg.main([str(study)])
    message = str(raised.value)
    assert message.startswith(f"{path}: {expected}") and "\n" not in message
    assert not (study / "gate.json").exists()


def test_a_folder_without_the_studys_runs_is_one_user_error_line(tmp_path):
    (tmp_path / "runs" / "beta_vae_shapes3d_original_seed0").mkdir(parents=True)
    with pytest.raises(UserError) as raised:
        fg.main([str(tmp_path)])
    assert str(raised.value).startswith("expected the feasibility study's directory")
    assert "\n" not in str(raised.value) and sorted(tmp_path.iterdir()) == [tmp_path / "runs"]


@pytest.mark.slow
def test_the_command_writes_the_gate_and_the_curves(tmp_path):
    study = write_study(tmp_path / "study", {0: curve([0.05, 0.2]), 1: curve([0.04, 0.1])})
    shown = python_m("benchmark.readings", "feasibility_gate", "study", cwd=tmp_path,
                     timeout=300)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == '{"decision": "go", "length": 10000}'
    assert sorted(p.name for p in study.iterdir()) == ["curves.png", "gate.json", "runs"]
    written = json.loads((study / "gate.json").read_text())
    assert written["decision"] == "go" and written["length"] == 10000
    assert written["rule"]["min_median_mig"] == 0.15
    assert (study / "curves.png").read_bytes()[:8] == PNG
