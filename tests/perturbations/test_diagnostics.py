"""Known-answer tests of the manipulation diagnostics (perturbations/diagnostics.py) and of
`python -m perturbations.inspect`: synthetic m's whose answers are known."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from benchmark.data import dsprites
from perturbations import artefact, diagnostics, manipulation

ROOT = pathlib.Path(__file__).resolve().parents[2]
SIZES = (3, 4, 5)
NAMES = ("a", "b", "c")


def _factors(n=64, seed=0):
    rng = np.random.default_rng(seed)
    return np.stack([rng.integers(0, s, n) for s in SIZES], axis=1)


def _pattern(seed=1, shape=(8, 8, 1)):
    return np.random.default_rng(seed).uniform(-0.5, 0.5, shape).astype(np.float32)


def _only_factor(j, pattern):
    """m(w) = pattern * w_j / (size_j - 1): depends on factor j alone."""
    def delta(factors):
        scale = factors[:, j] / (SIZES[j] - 1)
        return (scale[:, None, None, None] * pattern[None]).astype(np.float32)
    return delta


def _sensitivity(delta, factors):
    return diagnostics.factor_sensitivity(
        delta(factors), (delta(f) for f in diagnostics.stepped_factors(factors, SIZES)),
        NAMES)


def test_a_constant_pattern_is_image_independent_with_no_sensitivity():
    pattern = _pattern()
    delta = lambda f: np.repeat(pattern[None], len(f), axis=0)  # noqa: E731
    factors = _factors()
    found = diagnostics.spread(delta(factors))
    assert found["std_across_images"] == 0.0
    assert found["image_independent_share"] == pytest.approx(1.0)
    assert found["w_dependent_share"] == 0.0 and found["w_dependent_rms"] == 0.0
    assert found["mean_abs"] == pytest.approx(np.abs(pattern).mean(), rel=1e-6)
    sensitivity = _sensitivity(delta, factors)
    assert sensitivity["pair_spread"] == 0.0
    assert set(sensitivity["absolute"].values()) == {0.0}
    assert set(sensitivity["relative"].values()) == {0.0}


def test_energy_splits_exactly_into_mean_pattern_and_w_dependent_part():
    base, wiggle = _pattern(1), _pattern(2)
    signs = np.tile([1.0, -1.0], 50).astype(np.float32)          # balanced: mean 0
    m = base[None] + signs[:, None, None, None] * wiggle[None]
    found = diagnostics.spread(m)
    independent, dependent = np.mean(base.astype(np.float64) ** 2), np.mean(
        wiggle.astype(np.float64) ** 2)
    assert found["image_independent_energy_per_pixel"] == pytest.approx(independent, rel=1e-6)
    assert found["w_dependent_energy_per_pixel"] == pytest.approx(dependent, rel=1e-6)
    assert found["w_dependent_share"] == pytest.approx(dependent / (independent + dependent),
                                                       rel=1e-6)
    assert found["std_across_images"] == pytest.approx(np.abs(wiggle).mean(), rel=1e-5)
    assert found["image_independent_share"] + found["w_dependent_share"] == pytest.approx(1.0)


def test_independent_noise_is_almost_all_w_dependent_and_zero_m_has_no_w_dependent_part():
    noise = np.random.default_rng(0).uniform(-1, 1, (400, 8, 8, 1))
    assert diagnostics.spread(noise)["w_dependent_share"] > 0.99
    zero = diagnostics.spread(np.zeros((4, 8, 8, 1)))
    assert zero["w_dependent_share"] == 0.0 and zero["image_independent_share"] == 1.0


@pytest.mark.parametrize("j", range(len(SIZES)))
def test_a_pattern_of_one_factor_is_sensitive_to_that_factor_only(j):
    pattern = _pattern()
    sensitivity = _sensitivity(_only_factor(j, pattern), _factors(200))
    for i, name in enumerate(NAMES):
        if i == j:
            # one class step changes m by |pattern| / (size - 1) exactly
            assert sensitivity["absolute"][name] == pytest.approx(
                np.abs(pattern).mean() / (SIZES[j] - 1), rel=1e-5)
            assert sensitivity["relative"][name] > 0.0
        else:
            assert sensitivity["absolute"][name] == 0.0
            assert sensitivity["relative"][name] == 0.0


def test_stepped_factors_move_one_factor_by_one_class_and_stay_in_range():
    factors = np.array([[0, 0, 0], [2, 3, 4], [1, 2, 2]])
    stepped = diagnostics.stepped_factors(factors, SIZES)
    assert stepped.shape == (3, 3, 3)
    for j in range(3):
        others = [i for i in range(3) if i != j]
        np.testing.assert_array_equal(stepped[j][:, others], factors[:, others])
        assert np.all(np.abs(stepped[j][:, j] - factors[:, j]) == 1)
        assert np.all((stepped[j][:, j] >= 0) & (stepped[j][:, j] < SIZES[j]))
    assert np.array_equal(diagnostics.stepped_factors([[0]], [1]), [[[0]]])   # size 1 stays


def test_saturation_fraction():
    assert diagnostics.saturated_fraction(np.ones((3, 8, 8, 1))) == 1.0
    assert diagnostics.saturated_fraction(-np.full((3, 8, 8, 1), 0.95)) == 1.0
    assert diagnostics.saturated_fraction(np.full((3, 8, 8, 1), 0.9)) == 0.0   # strict
    half = np.concatenate([np.ones((2, 8, 8, 1)), np.zeros((2, 8, 8, 1))])
    assert diagnostics.saturated_fraction(half) == 0.5


def test_mean_abs_change_of_a_full_strength_pattern_and_of_uniform_noise():
    x = np.full((50, 16, 16, 1), 0.5, np.float32)
    assert diagnostics.mean_abs_change(x, np.ones_like(x), 0.1) == pytest.approx(0.1)
    edges = np.concatenate([np.zeros((4, 4, 4, 1)), np.ones((4, 4, 4, 1))]).astype(np.float32)
    toward_outside = np.concatenate([-np.ones((4, 4, 4, 1)), np.ones((4, 4, 4, 1))])
    assert diagnostics.mean_abs_change(edges, toward_outside, 0.2) == pytest.approx(0.2)
    noise = np.random.default_rng(0).uniform(-1, 1, x.shape)
    assert diagnostics.mean_abs_change(x, noise, 0.1) == pytest.approx(0.05, rel=0.02)


def test_scalar_distribution_profile_and_variance_shares():
    s = np.arange(101, dtype=np.float64)                          # 0..100: quantile q is q
    found = diagnostics.scalar_distribution(s)
    assert found["quantiles"] == {f"p{q}": pytest.approx(q) for q in diagnostics.QUANTILES}
    assert found["mean"] == pytest.approx(50.0) and found["std"] == pytest.approx(s.std())
    keys = list(found["quantiles"])
    grid = np.asarray(list(found["quantiles"].values()))
    constant = diagnostics.scalar_profile(grid, np.zeros((len(grid), 4, 4, 1)), keys)
    assert constant["mean_abs_change_over_range"] == 0.0
    assert set(constant["mean_abs_change_from_median"].values()) == {0.0}
    linear = diagnostics.scalar_profile(grid, grid[:, None, None, None] * np.ones((1, 4, 4, 1))
                                        / 100.0, keys)
    assert linear["mean_abs_change_over_range"] == pytest.approx(1.0)
    assert linear["mean_abs_change_from_median"]["p0"] == pytest.approx(0.5)
    shares = diagnostics.scalar_variance_shares([0.0, 2.0, 0.0], SIZES, NAMES)
    assert shares == {"a": 0.0, "b": 1.0, "c": 0.0}
    # equal weights, equal sizes -> equal shares; all-zero weights -> all zero
    assert set(diagnostics.scalar_variance_shares([1, -1], [4, 4], "xy").values()) == {0.5}
    assert set(diagnostics.scalar_variance_shares([0, 0], [4, 4], "xy").values()) == {0.0}


def test_factor_grid_is_exact_when_small_and_sampled_when_large():
    grid, exact = diagnostics.factor_grid(SIZES, np.random.default_rng(0))
    assert exact and grid.shape == (60, 3) and len(np.unique(grid, axis=0)) == 60
    sampled, exact = diagnostics.factor_grid(SIZES, np.random.default_rng(0), max_points=10)
    assert not exact and sampled.shape == (10, 3) and np.all(sampled < np.array(SIZES))


def test_minimum_effect_flags_a_nearly_constant_or_tiny_manipulation():
    def fake(share, rms, change, eps=0.1):
        return {"eps": eps, "m": {"w_dependent_share": share, "w_dependent_rms": rms},
                "change": {"modified_mean_abs_change": change}}
    assert not diagnostics.minimum_effect(fake(0.5, 0.3, 0.05))["below_minimum"]
    flagged = diagnostics.minimum_effect(fake(0.01, 0.3, 0.05))
    assert flagged["below_minimum"] and "w-dependent share" in flagged["reasons"][0]
    assert diagnostics.minimum_effect(fake(0.5, 0.3, 0.001))["below_minimum"]
    assert diagnostics.minimum_effect(fake(0.5, 0.01, 0.05))["below_minimum"]   # 0.001 < 1/255


def _artefact(tmp_path, kernel, name="art"):
    """A dSprites manipulation artefact whose single neuron has weights `kernel`."""
    network = manipulation.manipulation_network(5, (64, 64, 1))
    neuron = network.get_layer("single_neuron")
    neuron.set_weights([np.asarray(kernel, np.float32)[:, None], np.zeros(1, np.float32)])
    return artefact.save_manipulation(tmp_path / name, network, {
        "dataset": "dsprites", "source": "procedural", "factor_sizes": [3, 6, 40, 32, 32],
        "observation_shape": [64, 64, 1], "eps": 0.1, "training": {"seed": 0}})


def test_an_artefact_whose_neuron_sees_one_factor_is_sensitive_to_it_alone(tmp_path):
    directory = _artefact(tmp_path, [0, 0, 0, 3.0, 0])
    found = diagnostics.artefact_diagnostics(directory, num_images=24)
    json.dumps(found, allow_nan=False)                            # plain JSON values
    absolute = found["factor_sensitivity"]["absolute"]
    assert absolute["posX"] > 0
    for name in ("shape", "scale", "orientation", "posY"):
        assert absolute[name] < 1e-7
    scalar = found["scalar"]
    assert scalar["exact_grid"] and scalar["points"] == 3 * 6 * 40 * 32 * 32
    assert scalar["weights"]["posX"] == pytest.approx(3.0)
    assert scalar["variance_share_by_factor"]["posX"] == pytest.approx(1.0)
    assert scalar["quantiles"]["p0"] == pytest.approx(0.0, abs=1e-6)
    assert scalar["quantiles"]["p100"] == pytest.approx(3.0, rel=1e-6)
    assert 0.0 <= found["m"]["saturated_fraction"] <= 1.0
    change = found["change"]
    assert 0.0 < change["modified_mean_abs_change"] <= 0.1 + 1e-6
    assert change["noise_eps"] == 0.1
    assert change["noise_mean_abs_change"] == pytest.approx(0.05, rel=0.05)


def test_an_artefact_that_ignores_w_is_image_independent_and_flagged(tmp_path):
    directory = _artefact(tmp_path, [0, 0, 0, 0, 0])
    found = diagnostics.artefact_diagnostics(directory, num_images=16)
    assert found["m"]["std_across_images"] < 1e-6
    assert found["m"]["w_dependent_share"] < 1e-6
    assert found["m"]["image_independent_share"] == pytest.approx(1.0)
    assert max(found["factor_sensitivity"]["absolute"].values()) < 1e-7
    assert found["scalar"]["std"] == 0.0
    assert found["scalar"]["mean_abs_change_over_range"] == 0.0
    assert found["minimum_effect"]["below_minimum"]


def test_noise_artefacts_have_no_diagnostics_of_m(tmp_path):
    from perturbations.noise import write_noise_artefact
    directory = write_noise_artefact(tmp_path / "noise", "dsprites")
    with pytest.raises(artefact.ArtefactError, match="manipulation"):
        diagnostics.artefact_diagnostics(directory, num_images=4)


def test_write_evidence_keeps_other_keys(tmp_path):
    (tmp_path / "evidence.json").write_text(json.dumps({"reference_mig": {"x": 1}}))
    found = {"minimum_effect": {"below_minimum": True}, "m": {}}
    diagnostics.write_evidence(tmp_path, found)
    evidence = json.loads((tmp_path / "evidence.json").read_text())
    assert evidence == {"reference_mig": {"x": 1}, "diagnostics": found,
                        "below_minimum_effect": True}


@pytest.mark.slow
def test_inspect_command_prints_writes_json_and_publishes_without_touching_weights(tmp_path):
    directory = _artefact(tmp_path, [0.5, -1.0, 0.2, 2.0, -0.3])
    weights = (directory / artefact.WEIGHTS).read_bytes()
    metadata = (directory / "metadata.json").read_bytes()
    out = tmp_path / "diag.json"
    result = subprocess.run(
        [sys.executable, "-m", "perturbations.inspect", str(directory), "--num_images=12",
         f"--out={out}", "--publish"], cwd=ROOT, capture_output=True, text=True,
        timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "std of m across images" in result.stdout and "noise arm" in result.stdout
    written = json.loads(out.read_text())
    assert written["artefact"] == str(directory) and written["images"] == 12
    evidence = json.loads((directory / "evidence.json").read_text())
    assert evidence["diagnostics"]["images"] == 12
    assert evidence["below_minimum_effect"] == written["minimum_effect"]["below_minimum"]
    assert (directory / "figure.png").read_bytes()[:4] == b"\x89PNG"
    assert (directory / artefact.WEIGHTS).read_bytes() == weights
    assert (directory / "metadata.json").read_bytes() == metadata
    missing = subprocess.run([sys.executable, "-m", "perturbations.inspect",
                              str(tmp_path / "nowhere")], cwd=ROOT, capture_output=True,
                             text=True, timeout=300,
                             env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert missing.returncode == 2 and "metadata.json" in missing.stderr   # a UserError


def test_figure_is_drawn_without_pyplot(tmp_path):
    data = dsprites.DSprites(source="procedural")
    network = manipulation.manipulation_network(5, (64, 64, 1))
    found = diagnostics.manipulation_diagnostics(data, network, 0.1, num_images=6)
    from perturbations.generate import figure_sheet
    sheet, labels = figure_sheet(data, network, 0.1, np.random.default_rng(0), rows=2)
    path = diagnostics.save_figure(sheet, labels, "t", found, tmp_path / "f.png")
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_the_visible_m_folds_the_sign_that_binary_images_cannot_show():
    """On binary images reflect(x + eps m) keeps only |m|: an m that is one pattern with a
    sign flipped from image to image has a w-dependent raw energy of ~100 % and none that
    the images show (the 2-factor penalty artefact: raw 0.96, visible 0.19)."""
    rng = np.random.default_rng(0)
    pattern = np.abs(_pattern(2)) + 0.1
    signs = rng.choice([-1.0, 1.0], size=64).astype(np.float32)
    m = signs[:, None, None, None] * pattern[None]
    originals = (rng.random((64, 8, 8, 1)) > 0.7).astype(np.float32)
    assert diagnostics.spread(m)["w_dependent_share"] > 0.95
    visible = diagnostics.visible_spread(originals, m, 0.1)
    assert visible["w_dependent_share"] < 1e-9
    assert visible["mean_abs"] == pytest.approx(float(np.abs(pattern).mean()), rel=1e-5)
    # a truly factor-dependent m keeps a w-dependent visible part even when it is signed:
    # its magnitude grows with w (the visible share is that of |m|)
    growing = (np.linspace(0.1, 1.0, 64)[:, None, None, None] * signs[:, None, None, None]
               * pattern[None]).astype(np.float32)
    assert diagnostics.visible_spread(originals, growing, 0.1)["w_dependent_share"] == (
        pytest.approx(diagnostics.spread(np.abs(growing))["w_dependent_share"], rel=1e-4))
    assert diagnostics.visible_spread(originals, growing, 0.1)["w_dependent_share"] > 0.05
    assert diagnostics.visible_spread(originals * 0.5, m, 0.1) is None       # grey images
    # the minimum effect reads the visible share when it was measured
    fake = {"eps": 0.1, "m": {"w_dependent_share": 0.99, "w_dependent_rms": 0.3},
            "visible_m": {"w_dependent_share": 0.0, "w_dependent_rms": 0.0},
            "change": {"modified_mean_abs_change": 0.05}}
    flagged = diagnostics.minimum_effect(fake)
    assert flagged["below_minimum"] and "visible" in flagged["reasons"][0]
