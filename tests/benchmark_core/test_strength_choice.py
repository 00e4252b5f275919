"""The registered rule that picks the battery's strength (benchmark/studies/strength_choice.py),
on codes and runs whose answer is known."""

import numpy as np
import pytest

from benchmark.core.errors import UserError
from benchmark.studies import strength_choice


def _grid():
    x, y = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    return np.column_stack([x.ravel(), y.ravel()])


def test_code_measures_tell_a_turned_code_from_an_aligned_and_a_nonlinear_one():
    factors = _grid()
    rng = np.random.default_rng(0)
    f = (factors - factors.mean(0)) / factors.std(0)
    aligned = f + 0.01 * rng.normal(size=f.shape)
    angle = np.radians(40)
    turned = f @ np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    nonlinear = np.column_stack([np.sin(3 * f[:, 0]), np.cos(3 * f[:, 1])])
    a = strength_choice.code_measures(factors, aligned)
    t = strength_choice.code_measures(factors, turned)
    n = strength_choice.code_measures(factors, nonlinear)
    assert a["misalignment"] < 1 and a["linear_r2"] > 0.99 and a["factor_r2"] > 0.99
    assert t["misalignment"] == pytest.approx(40, abs=0.5)
    assert t["linear_r2"] > 0.99 and t["factor_r2"] > 0.99       # turned, nothing lost
    assert n["linear_r2"] < 0.5 and n["factor_r2"] < 0.5
    assert n["misalignment"] is None                                # no latent follows it


def _runs(angles, dci, r2=0.95):
    return [{"run": f"r{i}", "MIG": 0.3, "DCI-I": d, "misalignment": a, "linear_r2": r2,
             "factor_r2": r2} for i, (a, d) in enumerate(zip(angles, dci))]


def test_choose_picks_the_smallest_strength_that_turns_linearly_and_keeps_information():
    runs = {0.0: _runs([3, 5, 4, 6], [0.95] * 4),
            0.1: _runs([5, 7, 4, 6], [0.95] * 4),                   # not turned
            0.2: _runs([30, 28, 35, 33], [0.93, 0.94, 0.92, 0.93]),  # turned, kept
            0.3: _runs([40, 42, 41, 39], [0.94] * 4)}
    choice = strength_choice.choose(runs)
    rows = {r["strength"]: r for r in choice["strengths"]}
    assert choice["chosen"] == 0.2
    assert not rows[0.1]["turned"] and rows[0.2]["turned"] and rows[0.2]["kept"]
    assert rows[0.2]["misalignment_p"] < 0.05
    assert "Chosen strength: 0.2" in strength_choice.table_lines(choice)[-1]


@pytest.mark.parametrize("arm, failed", [
    (_runs([30, 28, 35, 33], [0.80] * 4), "kept"),                 # information lost
    (_runs([30, 28, 35, 33], [0.95] * 4, r2=0.2), "linear"),       # no longer linear
    (_runs([30, 2, 3, 33], [0.95] * 4), "turned"),                 # not shown above original
])
def test_choose_names_which_criterion_failed(arm, failed):
    choice = strength_choice.choose({0.0: _runs([3, 5, 4, 6], [0.95] * 4), 0.2: arm})
    assert choice["chosen"] is None
    row = choice["strengths"][1]
    assert row[failed] is False and not row["meets"]
    assert "none: no strength meets the rule" in strength_choice.table_lines(choice)[-1]


def test_the_readout_rule_does_not_charge_a_turned_code_for_the_trees_splits():
    """A turned arm that loses DCI-I (the trees' cost) but not the readout DCI-I fails (c)
    and meets (c'); an arm that loses both fails both; a run without the score is refused."""
    def with_readout(runs, readout):
        return [{**r, "DCI-I readout": q} for r, q in zip(runs, readout)]

    original = with_readout(_runs([3, 5, 4, 6], [0.95] * 4), [0.96] * 4)
    turned = with_readout(_runs([30, 28, 35, 33], [0.88] * 4), [0.95] * 4)
    lost = with_readout(_runs([30, 28, 35, 33], [0.88] * 4), [0.89] * 4)
    plain = strength_choice.choose({0.0: original, 0.2: turned})
    read = strength_choice.choose({0.0: original, 0.2: turned}, informativeness="readout")
    assert plain["chosen"] is None and read["chosen"] == 0.2
    row = read["strengths"][1]
    assert row["dci_i_drop"] == pytest.approx(0.07) and row["readout_drop"] == pytest.approx(0.01)
    assert "(c') readout DCI-I drop <= 0.05" in read["rule"]
    assert "readout drop" in strength_choice.table_lines(read)[0]
    assert strength_choice.choose({0.0: original, 0.2: lost},
                                  informativeness="readout")["chosen"] is None
    with pytest.raises(UserError, match="dci_readout score"):
        strength_choice.choose({0.0: original, 0.2: _runs([30, 28], [0.9, 0.9])},
                               informativeness="readout")
    with pytest.raises(UserError, match="informativeness must be one of"):
        strength_choice.choose({0.0: original}, informativeness="linear")


def test_choose_needs_the_original():
    with pytest.raises(UserError, match="no original runs"):
        strength_choice.choose({0.2: _runs([30], [0.9])})


def _pilot(study, arms, settings=None, readout=None):
    """A pilot study directory whose runs' codes are the factors rotated by a known angle
    per arm ({variant: degrees}; seed s adds s degrees), 3 seeds each."""
    import json

    from benchmark.runs import results

    study.mkdir()
    (study / "study.json").write_text(json.dumps({"settings": {
        "variants": list(arms), "datasets": ["dsprites"], **(settings or {})}}))
    factors = _grid()
    f = (factors - factors.mean(0)) / factors.std(0)
    for variant, angle in arms.items():
        for seed in range(3):
            a = np.radians(angle + seed)
            codes = f @ np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
            run = study / "runs" / f"beta_vae_dsprites_{variant}_seed{seed}"
            run.mkdir(parents=True)
            np.savez(run / "eval_codes.npz", factors=factors, codes=codes)
            base, _, eps = variant.partition("@")
            results.write(run, model="beta_vae", seed=seed,
                          dataset={"name": "dsprites", "variant": base,
                                   **({"eps": float(eps)} if eps else {})},
                          scores={"mig": {"mig": 0.5},
                                  "dci": {"dci_informativeness_test": 0.95,
                                          "dci_disentanglement": 0.5,
                                          "dci_completeness": 0.5},
                                  **({} if readout is None else {"dci_readout": {
                                      "dci_readout_informativeness_test": readout}})},
                          final_losses={}, gin_config=f"run.seed = {seed}")
    return study


def test_the_command_chooses_from_a_pilot_studys_runs(tmp_path):
    """`python -m benchmark.strength_choice STUDY_DIR` on a pilot whose codes are known: the
    original aligned, wave@0.1 aligned, wave@0.2 turned by 35 degrees (linear, nothing lost)."""
    import json

    from tests.cli import python_m

    study = _pilot(tmp_path / "pilot", {"original": 0, "wave@0.1": 2, "wave@0.2": 35})
    result = python_m("benchmark.strength_choice", str(study))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Chosen strength: 0.2" in result.stdout
    written = json.loads((study / "strength_choice.json").read_text())
    assert written["chosen"] == 0.2 and written["model"] == "beta_vae"
    assert written["units"] == "classes"
    spread = python_m("benchmark.strength_choice", str(study), "--units=spread")
    assert spread.returncode == 0, spread.stderr[-3000:]
    assert "Chosen strength: 0.2" in spread.stdout and "spreads" in spread.stdout
    assert json.loads((study / "strength_choice.json").read_text())["units"] == "spread"
    no_readout = python_m("benchmark.strength_choice", str(study), "--informativeness=readout")
    assert no_readout.returncode == 2 and "dci_readout score" in no_readout.stderr
    read = _pilot(tmp_path / "read", {"original": 0, "wave@0.2": 35}, readout=0.9)
    result = python_m("benchmark.strength_choice", str(read), "--informativeness=readout")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Chosen strength: 0.2" in result.stdout and "readout drop" in result.stdout
    assert json.loads((read / "strength_choice.json").read_text())["informativeness"] == "readout"
    refused = python_m("benchmark.strength_choice", str(tmp_path / "none"))
    assert refused.returncode == 2 and refused.stderr.strip().splitlines()[-1].startswith(
        "error: ")


def test_a_pilot_of_wave_arms_alone_takes_its_original_arm_from_another_study(tmp_path):
    """--original_from: a pilot whose wave arms carry their own binding (data.wave_periods,
    which the original arm refuses) reads the original arm of a study with the same settings
    otherwise; a study with other settings is refused, naming the difference."""
    same = {"models": {"beta_vae": "b.gin"}, "bindings": ["run.steps = 3000"]}
    original = _pilot(tmp_path / "original", {"original": 0}, same)
    waves = _pilot(tmp_path / "waves", {"wave@0.3": 2, "wave@0.4": 35},
                   {**same, "bindings": ["run.steps = 3000", "data.wave_periods = 2"]})
    runs = strength_choice.pilot_runs(waves, "beta_vae", original_dir=original)
    assert [len(runs[s]) for s in (0.0, 0.3, 0.4)] == [3, 3, 3]
    assert strength_choice.choose(runs)["chosen"] == 0.4
    other = _pilot(tmp_path / "other", {"original": 0},
                   {**same, "bindings": ["run.steps = 6000"]})
    with pytest.raises(UserError, match="bindings differ .*run.steps"):
        strength_choice.pilot_runs(waves, "beta_vae", original_dir=other)
    with_floor = _pilot(tmp_path / "with_floor", {"original": 0},
                        {**same, "models": {"beta_vae": "b.gin", "ae": "a.gin"}})
    runs = strength_choice.pilot_runs(waves, "beta_vae", original_dir=with_floor)
    assert len(runs[0.0]) == 3                 # the original study's floor model is no bar
    other_model = _pilot(tmp_path / "other_model", {"original": 0},
                         {**same, "models": {"beta_vae": "c.gin"}})
    with pytest.raises(UserError, match="trains beta_vae as 'c.gin'"):
        strength_choice.pilot_runs(waves, "beta_vae", original_dir=other_model)


def test_the_geometry_rule_reads_the_turn_against_the_images_own_turn():
    """--turn=geometry: 14 degrees is no turn by the absolute rule (22.5) but is one where
    the local geometry turned 18.7 (half: 9.35); it is none where the geometry turned 40."""
    runs = {0.0: _runs([3, 5, 4, 6], [0.95] * 4),
            0.1: _runs([12, 16, 14, 15], [0.94] * 4),
            0.15: _runs([18, 19, 17, 18], [0.94] * 4)}
    absolute = strength_choice.choose(runs)
    assert absolute["chosen"] is None and absolute["turn"] == "absolute"
    relative = strength_choice.choose(runs, geometry={0.1: 18.7, 0.15: 40.0})
    rows = {r["strength"]: r for r in relative["strengths"]}
    assert relative["chosen"] == 0.1 and relative["turn"] == "geometry"
    assert rows[0.1]["turned"] and rows[0.1]["followed_share"] == 1.0
    assert not rows[0.15]["turned"] and rows[0.15]["followed_share"] == 0.0   # 18 < 20
    assert "geometry turn" in strength_choice.table_lines(relative)[0]
    with pytest.raises(UserError, match="no local geometry computed for strength 0.15"):
        strength_choice.choose(runs, geometry={0.1: 18.7})


def test_the_geometry_rule_computes_the_waves_turn_on_the_ellipse_only():
    ellipse = {"bindings": ["data.fixed_factors = {'shape': 1, 'scale': 5, 'orientation': 0}",
                            "run.steps = 3000"], "variants": ["original", "wave@0.1"]}
    turns = strength_choice.geometry_turns(ellipse, [0.0, 0.1])
    assert list(turns) == [0.1] and turns[0.1] == pytest.approx(18.7, abs=0.1)
    with pytest.raises(UserError, match="needs the pilot's sweep"):    # which one: unsaid
        strength_choice.geometry_turns({**ellipse, "variants": ["wave@0.1", "rotated@5"]},
                                       [0.1])
    for other in ({"bindings": ["run.steps = 3000"]},
                  {"bindings": [*ellipse["bindings"], "data.wave_direction = 1.0"]}):
        with pytest.raises(UserError, match="--turn=geometry computes"):
            strength_choice.geometry_turns(other, [0.1])
    # the wave of the pilot's own period: 4 periods turn the axis 11.7 deg at 0.1
    four = {**ellipse, "bindings": [*ellipse["bindings"], "data.wave_periods = 4"]}
    assert strength_choice.geometry_turns(four, [0.1])[0.1] == pytest.approx(11.7, abs=0.1)
    with pytest.raises(UserError, match="data.wave_periods: expected a positive number"):
        strength_choice.geometry_turns(
            {**ellipse, "bindings": [*ellipse["bindings"], "data.wave_periods = -4"]}, [0.1])


def test_the_geometry_rule_computes_the_rotated_sprites_turn():
    """A pilot whose sweep is the 'rotated' sprite reads (b') against that sprite's own
    local geometry: 41.8 deg off the axes at rotated@5, 4.4 deg at rotated@10."""
    ellipse = {"bindings": ["data.fixed_factors = {'shape': 1, 'scale': 5, 'orientation': 0}"],
               "variants": ["original", "rotated@5", "rotated@10"]}
    turns = strength_choice.geometry_turns(ellipse, [0.0, 5.0, 10.0])
    assert turns == {5.0: pytest.approx(41.8, abs=0.1), 10.0: pytest.approx(4.4, abs=0.1)}
    with pytest.raises(UserError, match="'wave' and 'rotated' sweeps"):
        strength_choice.geometry_turns({**ellipse, "variants": ["original", "noisy@0.1"]},
                                       [0.1])


def test_runs_whose_codes_are_gone_are_read_from_the_studys_alignment_json(tmp_path):
    """A published pilot keeps some runs' angles only (alignment.json): those runs give the
    same misalignment and linear R^2 as their codes did, no factor R^2 (the table says of
    how many runs its mean is); a run with neither is refused, naming both."""
    import json

    from benchmark.metrics import alignment

    study = _pilot(tmp_path / "pilot", {"original": 0, "wave@0.2": 35})
    before = strength_choice.pilot_runs(study, "beta_vae")
    alignment.update_study_alignment(study)
    gone = study / "runs" / "beta_vae_dsprites_wave@0.2_seed1" / "eval_codes.npz"
    gone.unlink()
    after = strength_choice.pilot_runs(study, "beta_vae")
    for strength in before:
        for old, new in zip(before[strength], after[strength]):
            assert new["misalignment"] == pytest.approx(old["misalignment"])
            assert new["linear_r2"] == pytest.approx(old["linear_r2"])
    read = {r["run"]: r for r in after[0.2]}["beta_vae_dsprites_wave@0.2_seed1"]
    assert read["codes"] is False and read["factor_r2"] is None
    choice = strength_choice.choose(after)
    assert choice["chosen"] == 0.2 and choice["strengths"][1]["n_codes"] == 2
    assert any("| 0.2 | 3 |" in line and "(2/3)" in line
               for line in strength_choice.table_lines(choice))
    saved = json.loads((study / "alignment.json").read_text())
    saved["runs"] = [r for r in saved["runs"] if r["run"] != gone.parent.name]
    (study / "alignment.json").write_text(json.dumps(saved))
    with pytest.raises(UserError, match="evaluation codes, or its row in .*found neither"):
        strength_choice.pilot_runs(study, "beta_vae")


def test_the_geometry_rule_reads_a_strided_pilots_own_geometry():
    """A pilot on posY at stride 2 (data.factor_strides) is read against that plane's
    geometry: rotated@5 turns its principal axis 25.1 deg off the axes there, not the
    unstrided plane's 41.8."""
    strided = {"bindings": ["data.fixed_factors = {'shape': 1, 'scale': 5, 'orientation': 0}",
                            "data.factor_strides = {'posY': 2}"],
               "variants": ["original", "rotated@5"]}
    turns = strength_choice.geometry_turns(strided, [0.0, 5.0])
    assert turns == {5.0: pytest.approx(25.1, abs=0.1)}
    with pytest.raises(UserError, match="data.factor_strides: expected a dict literal"):
        strength_choice.geometry_turns({**strided, "bindings": [
            *strided["bindings"][:1], "data.factor_strides = posY"]}, [5.0])


def test_the_geometry_rule_reads_a_windowed_pilot_in_the_factors_spreads():
    """A pilot on a window of posX (data.factor_ranges) has factors of unequal spread: in
    class steps it is refused, naming --units=spread; in spreads its turn is the whitened
    axis's distance to the factor axes on that window (perturbations.geometry), and the
    codes' misalignment is their spread misalignment."""
    from perturbations.geometry import misalignment_deg, rotation_rows

    windowed = {"bindings": ["data.fixed_factors = {'shape': 1, 'scale': 5, 'orientation': 0}",
                             "data.factor_ranges = {'posX': (10, 21)}"],
                "variants": ["original", "rotated@5"]}
    with pytest.raises(UserError, match="data.factor_ranges.*--units=spread"):
        strength_choice.geometry_turns(windowed, [0.0, 5.0])
    turns = strength_choice.geometry_turns(windowed, [0.0, 5.0], units="spread")
    row = rotation_rows([5], ranges={"posX": (10, 21)})[1]
    assert turns == {5.0: pytest.approx(misalignment_deg(row["whitened_axis_deg"]))}
    assert turns[5.0] != pytest.approx(row["misalignment_deg"], abs=1.0)


def test_spread_units_divide_each_factor_by_its_spread():
    """A latent z = posX + posY on a plane where posX spans a third of posY's classes lies
    at 45 deg in class steps but near posY in spreads; choose says the units in its rule."""
    from benchmark.metrics import alignment

    grid = np.stack(np.meshgrid(np.arange(10.0), np.arange(30.0), indexing="ij"), -1)
    factors = grid.reshape(-1, 2)
    codes = np.column_stack([factors[:, 0] + factors[:, 1], factors[:, 0] - factors[:, 1]])
    steps = strength_choice.code_measures(factors, codes)
    spreads = strength_choice.code_measures(factors, codes, units="spread")
    assert steps["misalignment"] == pytest.approx(45.0)
    expected = np.mean(alignment.linear_angles(factors, codes)[alignment.SPREAD_KEY])
    assert spreads["misalignment"] == pytest.approx(expected) and expected < 20.0
    runs = {0.0: [{"MIG": 0.1, "DCI-I": 0.9, "linear_r2": 0.9, "factor_r2": 0.9,
                   "misalignment": 5.0}] * 2}
    assert "spreads" in strength_choice.choose(runs, units="spread")["rule"]
    assert "spreads" not in strength_choice.choose(runs)["rule"]
