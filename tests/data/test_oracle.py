import gin
import numpy as np
import pytest

from benchmark.data import dsprites, load_data, make_variant
from benchmark.data.ground_truth import GroundTruthData
from benchmark.data.oracle import (ORACLE_EPS, ORACLE_FIXED_FACTORS, WAVE_PERIODS, OracleData,
                                   TextureData, WaveData, WaveTextureData, arm_magnitudes,
                                   local_factor_gram, matched_noise_eps, mean_abs_change,
                                   mean_change,
                                   oracle_pattern, wave_delta)
from benchmark.data.subset import FactorSubset
from benchmark.data.variants import NoisyData


@pytest.fixture(scope="module")
def reduced():
    return FactorSubset(dsprites.DSprites(source="procedural"), ORACLE_FIXED_FACTORS)


def test_pattern_is_smooth_fixed_and_in_range():
    pattern = oracle_pattern((64, 64, 1))
    assert pattern.shape == (64, 64, 1) and pattern.dtype == np.float32
    assert -1.0 <= pattern.min() < -0.99 and 0.99 < pattern.max() <= 1.0
    assert np.abs(pattern).mean() == pytest.approx(0.6365, abs=1e-3)
    assert pattern[0, 0, 0] > 0.99 and pattern[0, 63, 0] == pytest.approx(-1.0)
    assert np.abs(np.diff(pattern, axis=0)).max() < 0.05          # smooth: <= 2 pi / 128
    np.testing.assert_array_equal(pattern, oracle_pattern((64, 64, 1)))
    assert oracle_pattern((64, 64, 3)).shape == (64, 64, 3)


def test_oracle_delta_depends_on_x_plus_y_only(reduced):
    oracle = OracleData(reduced)
    assert oracle.eps == ORACLE_EPS and oracle.describe()["variant"] == "oracle"
    same_s = oracle.delta([[3, 10], [10, 3], [6, 7], [13, 0]])
    for other in same_s[1:]:
        np.testing.assert_array_equal(other, same_s[0])
    np.testing.assert_allclose(same_s[0], oracle.pattern * 13 / 62, rtol=1e-6)
    corners = oracle.delta([[0, 0], [31, 31]])
    assert np.abs(corners[0]).max() == 0.0                       # s = 0: no change
    np.testing.assert_allclose(corners[1], oracle.pattern)       # s = 1: the pattern
    assert not np.array_equal(same_s[0], oracle.delta([[3, 11]])[0])


def test_oracle_sensitivity_is_equal_for_posx_and_posy(reduced):
    oracle = OracleData(reduced)
    w = np.array([[5, 20]])
    base = oracle.delta(w)
    step_x = oracle.delta(w + [1, 0]) - base
    step_y = oracle.delta(w + [0, 1]) - base
    np.testing.assert_allclose(step_x, step_y, atol=1e-6)
    np.testing.assert_allclose(step_x[0], oracle.pattern / 62, atol=1e-6)


def test_texture_delta_is_the_same_for_every_image_and_the_oracles_mean(reduced):
    texture = TextureData(reduced)
    assert texture.describe()["variant"] == "texture"
    every = reduced.factors_of(np.arange(reduced.num_images))
    deltas = texture.delta(every)
    assert (deltas == deltas[0]).all()
    np.testing.assert_allclose(deltas[0], OracleData(reduced).delta(every).mean(axis=0),
                               atol=1e-6)


def test_arms_have_matched_mean_change(reduced):
    magnitudes = arm_magnitudes(reduced)
    # Binary images: mean |x' - x| = eps E[s] mean|P| = 0.157 * 0.5 * 0.6365.
    assert magnitudes["oracle"] == pytest.approx(0.05, rel=0.01)
    assert magnitudes["texture"] == pytest.approx(magnitudes["oracle"], rel=1e-4)
    assert magnitudes["noise_eps"] == pytest.approx(0.1, rel=0.01)
    assert magnitudes["noise"] == pytest.approx(magnitudes["oracle"], rel=0.05)
    # The helper's eps, used by NoisyData itself on a sample, matches within 5 % too.
    oracle = OracleData(reduced, eps=0.3)
    eps = matched_noise_eps(oracle, noise_seed=3, num_images=200, seed=1)
    noisy = mean_abs_change(NoisyData(reduced, eps, seed=3), num_images=200, seed=1)
    assert noisy == pytest.approx(mean_abs_change(oracle, num_images=200, seed=1), rel=0.05)
    with pytest.raises(ValueError, match="no noise eps"):
        matched_noise_eps(NoisyData(reduced, eps=1.0, seed=0), noise_seed=1, num_images=50)


def test_noise_matched_in_energy_has_the_waves_energy_per_image(reduced):
    """The quickstart's control: uniform noise matched to the wave in mean (x' - x)^2 (what
    a squared error sees), which differs from the match in mean |x' - x|."""
    wave = WaveData(reduced, eps=0.3)
    by_energy = matched_noise_eps(wave, num_images=300, power=2)
    by_abs = matched_noise_eps(wave, num_images=300)
    energy = mean_change(wave, num_images=300, power=2)
    assert mean_change(NoisyData(reduced, by_energy, seed=0), num_images=300, power=2) == \
        pytest.approx(energy, rel=1e-3)
    assert by_energy < by_abs          # noise spreads its energy: less of it at equal |x' - x|
    assert mean_change(wave, num_images=300, power=1) == pytest.approx(
        mean_abs_change(wave, num_images=300))


def test_variants_through_make_variant_and_gin(reduced):
    assert isinstance(make_variant(reduced, "oracle"), OracleData)
    assert make_variant(reduced, "texture", eps=0.2).eps == 0.2
    with pytest.raises(ValueError, match="takes no artefact"):
        make_variant(reduced, "oracle", artefact="somewhere")
    with pytest.raises(ValueError, match=r"needs the free factors \['posX', 'posY'\]"):
        make_variant(FactorSubset(reduced.base, {"posX": 0}), "oracle")
    gin.clear_config()
    try:
        gin.parse_config(["data.source = 'procedural'", "data.variant = 'oracle'",
                          "data.fixed_factors = {'shape': 0, 'scale': 5, 'orientation': 0}"])
        data = load_data()
    finally:
        gin.clear_config()
    assert isinstance(data, OracleData) and data.factor_sizes == (32, 32)
    described = data.describe()
    assert described["variant"] == "oracle" and described["eps"] == ORACLE_EPS
    assert described["fixed_factors"] == ORACLE_FIXED_FACTORS
    images = data.images([0, 1023])
    assert images.shape == (2, 64, 64, 1) and 0.0 <= images.min() and images.max() <= 1.0


class _LinearImages(GroundTruthData):
    """x(w) = 0.01 (a u + b v) + 0.5 on a 9 x 7 grid: central differences are 0.02 u and
    0.02 v exactly, so the local Gram matrix is 4e-4 [[u.u, u.v], [u.v, v.v]]."""

    name = "linear"
    factor_names = ("a", "b")
    factor_sizes = (9, 7)
    factor_values = (np.arange(9.0), np.arange(7.0))
    observation_shape = (4, 4, 1)

    def __init__(self, u, v):
        self.u, self.v = np.asarray(u, np.float64), np.asarray(v, np.float64)

    def observations_from_factors(self, factors, rng=None):
        f = np.asarray(factors, np.float64)
        flat = 0.5 + 0.01 * (f[:, :1] * self.u + f[:, 1:] * self.v)
        return flat.reshape(len(f), 4, 4, 1).astype(np.float32)


def test_local_factor_gram_known_answer():
    rng = np.random.default_rng(3)
    u, v = rng.normal(size=16), rng.normal(size=16)
    data = _LinearImages(u, v)
    out = local_factor_gram(data, ("a", "b"))
    expected = 4e-4 * np.array([[u @ u, u @ v], [u @ v, v @ v]])
    np.testing.assert_allclose(out["gram"], expected, rtol=1e-4)
    assert out["correlation"] == pytest.approx(u @ v / np.sqrt((u @ u) * (v @ v)), rel=1e-4)
    assert out["num_images"] == 7 * 5                    # interior points only
    orthogonal = local_factor_gram(_LinearImages(np.eye(16)[0], np.eye(16)[1]), ("a", "b"))
    assert orthogonal["correlation"] == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(ValueError, match="two factor names"):
        local_factor_gram(data, ("a",))
    wide = local_factor_gram(data, ("a", "b"), step=2)      # differences 0.04 u, 0.04 v
    np.testing.assert_allclose(wide["gram"], 4 * expected, rtol=1e-4)
    assert wide["num_images"] == 5 * 3
    with pytest.raises(ValueError, match="step of 1 or more"):
        local_factor_gram(data, ("a", "b"), step=0)
    with pytest.raises(ValueError, match="can step 4 classes both ways"):
        local_factor_gram(data, ("a", "b"), step=4)


def test_wave_moves_the_phase_with_x_plus_y_and_mixes_the_local_geometry(reduced):
    wave, texture = WaveData(reduced), WaveTextureData(reduced)
    assert wave.describe()["variant"] == "wave" and texture.describe()["variant"] == "wave_texture"
    same_s = wave.delta([[3, 10], [10, 3]])
    np.testing.assert_array_equal(same_s[0], same_s[1])
    np.testing.assert_allclose(wave.delta([[0, 0]])[0], wave_delta((64, 64, 1), [0.0])[0])
    np.testing.assert_allclose(wave.delta([[31, 31]])[0],
                               wave_delta((64, 64, 1), [WAVE_PERIODS])[0], atol=1e-5)
    np.testing.assert_allclose(wave_delta((64, 64, 1), [0.0])[0], oracle_pattern((64, 64, 1)),
                               atol=1e-6)
    constant = texture.delta([[0, 0], [31, 31], [5, 9]])
    np.testing.assert_array_equal(constant[0], constant[1])
    np.testing.assert_array_equal(constant[0], constant[2])
    # Both move every image by the same amount; only the wave mixes posX and posY locally
    # (measured values quoted in the WaveData docstring and studies/oracle_wave_cpu.gin).
    assert mean_abs_change(wave) == pytest.approx(mean_abs_change(texture), abs=2e-4)
    assert local_factor_gram(reduced)["correlation"] == pytest.approx(0.0, abs=1e-3)
    assert local_factor_gram(OracleData(reduced))["correlation"] < 0.01
    assert local_factor_gram(texture)["correlation"] < 0.01
    assert local_factor_gram(wave)["correlation"] == pytest.approx(0.396, abs=0.01)
    assert isinstance(make_variant(reduced, "wave", eps=0.1), WaveData)


def test_a_wave_along_a_direction_of_the_plane(reduced):
    from benchmark.core.errors import ConfigError
    from benchmark.data.oracle import WaveData, directed_scalar, mixed_scalar
    factors = reduced.sample_factors(200, np.random.default_rng(0))
    np.testing.assert_allclose(directed_scalar(reduced, factors, 45.0),
                               mixed_scalar(reduced, factors), atol=1e-12)
    cols = [list(reduced.factor_names).index(n) for n in ("posX", "posY")]
    scaled = factors[:, cols] / (np.asarray(reduced.factor_sizes)[cols] - 1)
    np.testing.assert_allclose(directed_scalar(reduced, factors, 0.0), scaled[:, 0])
    np.testing.assert_allclose(directed_scalar(reduced, factors, 90.0), scaled[:, 1],
                               atol=1e-12)
    np.testing.assert_allclose(directed_scalar(reduced, factors, 135.0),
                               (scaled[:, 1] - scaled[:, 0] + 1) / 2, atol=1e-12)
    # the default wave is unchanged; a directed one follows its direction alone
    default, diagonal = WaveData(reduced, 0.3), WaveData(reduced, 0.3, direction_deg=45.0)
    np.testing.assert_allclose(default.delta(factors), diagonal.delta(factors), atol=1e-5)
    along_x = WaveData(reduced, 0.3, direction_deg=0.0)
    moved = factors.copy()
    moved[:, cols[1]] = (moved[:, cols[1]] + 3) % reduced.factor_sizes[cols[1]]
    np.testing.assert_array_equal(along_x.delta(factors), along_x.delta(moved))
    assert along_x.describe()["wave_direction_deg"] == 0.0
    assert "wave_direction_deg" not in default.describe()
    gin.clear_config()
    gin.parse_config(["data.variant = 'wave'", "data.eps = 0.3", "data.wave_direction = 200",
                      "data.fixed_factors = {'shape': 1, 'scale': 5, 'orientation': 0}",
                      "data.source = 'procedural'"])
    try:
        assert load_data().direction_deg == pytest.approx(20.0)
    finally:
        gin.clear_config()
    with pytest.raises(ConfigError, match="wave_direction applies to the 'wave'"):
        make_variant(reduced, "noisy", eps=0.1, wave_direction=30.0)
    with pytest.raises(ConfigError, match="must be a number of degrees"):
        WaveData(reduced, 0.3, direction_deg=float("nan"))


def test_a_wave_with_fewer_periods_turns_the_geometry_at_a_larger_eps(reduced):
    """data.wave_periods: the phase turns that many times over s. On the ellipse, 2 periods
    at eps 0.3 turn the local geometry as far as 8 at 0.15 (principal axis 33.8° and 31.8°
    off the factor axes), with the wave's energy of eps²; the periods are named in
    describe() (what the run's data cache is keyed on); other variants refuse them."""
    from benchmark.core.errors import ConfigError
    from benchmark.data import get_dataset
    from benchmark.data.oracle import WaveData
    from perturbations.geometry import ELLIPSE_FIXED, geometry_row
    ellipse = FactorSubset(get_dataset("dsprites", "procedural"), ELLIPSE_FIXED)
    two = WaveData(ellipse, 0.3, periods=2)
    factors = ellipse.sample_factors(50, np.random.default_rng(0))
    np.testing.assert_allclose(two.phase(factors), 2 * two.scalar(factors))
    assert geometry_row(two)["misalignment_deg"] == pytest.approx(33.8, abs=0.1)
    assert geometry_row(WaveData(ellipse, 0.15))["misalignment_deg"] == pytest.approx(
        31.8, abs=0.1)
    assert two.describe()["wave_periods"] == 2.0 and "+ 2 s(w)" in two.pattern_description
    assert "wave_periods" not in WaveData(ellipse, 0.3).describe()
    assert f"+ {WAVE_PERIODS} s(w)" in WaveData(ellipse, 0.3).pattern_description
    gin.clear_config()
    gin.parse_config(["data.variant = 'wave'", "data.eps = 0.3", "data.wave_periods = 2",
                      "data.fixed_factors = {'shape': 1, 'scale': 5, 'orientation': 0}",
                      "data.source = 'procedural'"])
    try:
        assert load_data().periods == 2.0
    finally:
        gin.clear_config()
    with pytest.raises(ConfigError, match="wave_periods applies to the 'wave'"):
        make_variant(reduced, "noisy", eps=0.1, wave_periods=2)
    with pytest.raises(ConfigError, match="must be a number in"):
        WaveData(reduced, 0.3, periods=0)


def test_a_wave_in_the_plane_of_other_factors():
    """data.wave_factors: the wave's phase moves with the two factors named (scale x posX
    with posY fixed), so images of equal s share one delta and the plane is in describe();
    a plane of one factor, or of a factor the data lacks, is one error; other variants
    refuse the setting."""
    from benchmark.core.errors import ConfigError
    from benchmark.data import get_dataset
    base = FactorSubset(get_dataset("dsprites", "procedural"),
                        {"shape": 1, "posY": 16, "orientation": 0})
    assert base.factor_names == ("scale", "posX")
    wave = make_variant(base, "wave", eps=0.3, wave_factors=["posX", "scale"])
    assert wave.oracle_factors == ("posX", "scale")
    assert wave.describe()["oracle_factors"] == ["posX", "scale"]
    # s = (posX / 31 + scale / 5) / 2: (scale 0, posX 31) and (scale 5, posX 0) share s = 0.5
    same = wave.delta([[0, 31], [5, 0]])
    np.testing.assert_array_equal(same[0], same[1])
    assert np.abs(wave.delta([[0, 0]]) - wave.delta([[1, 0]])).max() > 0.5
    gin.clear_config()
    gin.parse_config(["data.variant = 'wave'", "data.eps = 0.3",
                      "data.wave_factors = ['posX', 'scale']",
                      "data.fixed_factors = {'shape': 1, 'posY': 16, 'orientation': 0}",
                      "data.source = 'procedural'"])
    try:
        assert load_data().oracle_factors == ("posX", "scale")
    finally:
        gin.clear_config()
    with pytest.raises(ConfigError, match="two distinct factor names"):
        make_variant(base, "wave", eps=0.3, wave_factors=["posX"])
    with pytest.raises(ConfigError, match=r"missing \['posY'\]"):
        make_variant(base, "wave", eps=0.3, wave_factors=["posX", "posY"])
    with pytest.raises(ConfigError, match="wave_factors applies to the 'wave'"):
        make_variant(base, "noisy", eps=0.1, wave_factors=["posX", "scale"])
