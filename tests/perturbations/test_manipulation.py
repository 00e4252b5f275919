import functools
import json

import numpy as np
import pytest
import tensorflow as tf

from benchmark import data as data_lib
from benchmark.data import dsprites, export, pipeline
from benchmark.data.variants import NoisyData, reflect as reflect_np
from benchmark.runs import train as train_lib
from models.architectures import conv_decoder, conv_encoder
from perturbations import artefact, manipulation
from perturbations.noise import write_noise_artefact
from tests.data.test_export_and_cli import SMALL_DSPRITES, _small_dsprites

#: the data layer composed with the artefact loader, as the runner does
make_variant = functools.partial(data_lib.make_variant, artefact_loader=artefact.load_variant)
load_data = functools.partial(data_lib.load_data, artefact_loader=artefact.load_variant)


def test_reflection_identity_inside_and_lands_in_unit_interval():
    inside = np.linspace(0, 1, 1001, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(manipulation.reflect(inside)), inside)
    outside = np.random.default_rng(0).uniform(-1, 2, 10000).astype(np.float32)
    folded = np.asarray(manipulation.reflect(outside))
    assert folded.min() >= 0.0 and folded.max() <= 1.0
    np.testing.assert_allclose(folded, reflect_np(outside), atol=1e-6)


def test_manipulation_is_bounded_and_a_function_of_the_factors():
    network = manipulation.manipulation_network(5, (64, 64, 1))
    extreme = np.random.default_rng(0).normal(0, 50, (8, 5)).astype(np.float32)
    assert np.abs(np.asarray(network(extreme))).max() <= 1.0
    assert network.get_layer("single_neuron").units == 1
    delta = manipulation.manipulation_delta_fn(network, (3, 6, 40, 32, 32))
    factors = np.array([[1, 2, 3, 4, 5], [0, 5, 39, 31, 0], [1, 2, 3, 4, 5]])
    out = delta(factors)
    assert out.shape == (3, 64, 64, 1) and out.dtype == np.float32
    np.testing.assert_array_equal(out[0], out[2])
    assert not np.array_equal(out[0], out[1])


def test_an_images_delta_is_the_same_bits_in_any_batch():
    """Each image's m(w) whatever the batch it is asked in (1 row, 64, 200, 1,000): the
    materialised variant serves the bits per-batch rendering gives on any CPU."""
    network = manipulation.manipulation_network(5, (64, 64, 1))
    delta = manipulation.manipulation_delta_fn(network, (3, 6, 40, 32, 32))
    rng = np.random.default_rng(1)
    factors = np.stack([rng.integers(0, s, 1000) for s in (3, 6, 40, 32, 32)], axis=1)
    every = delta(factors)
    assert every.shape == (1000, 64, 64, 1)
    for rows in (slice(0, 1), slice(7, 71), slice(100, 300)):
        np.testing.assert_array_equal(delta(factors[rows]), every[rows])
    np.testing.assert_array_equal(delta(factors[::-1]), every[::-1])


def _game(seed=0, eps=0.1):
    keras_seed = tf.keras.utils.set_random_seed
    keras_seed(seed)
    pairs = [(conv_encoder((64, 64, 1), 3, name=f"e{i}"), conv_decoder(3, (64, 64, 1),
                                                                     name=f"d{i}"))
             for i in range(2)]
    return manipulation.ManipulationGame(manipulation.manipulation_network(5), pairs[:1],
                                         pairs[1:], eps, latent_samples=2)


def _stream(first):
    data = dsprites.DSprites(source="procedural")
    return pipeline.factor_image_dataset(data, 8, 0, first)


def test_game_step_trains_decoders_and_m_but_never_the_encoders():
    game = _game()
    encoder = [w.numpy().copy() for w in game.entangled_encoders[0].weights]
    decoder = [w.numpy().copy() for w in game.disentangled_decoders[0].weights]
    m = [w.numpy().copy() for w in game.manipulation.weights]
    terms = game.train_step(next(iter(_stream(0))), tf.constant(0, tf.int64),
                            tf.constant([0, 0], tf.int64))
    assert all(np.isfinite(float(v)) for v in terms.values())
    assert float(terms["loss"]) == pytest.approx(float(terms["reconstruction_entangled"])
                                                 - float(terms["reconstruction_disentangled"]),
                                                 rel=1e-5)
    assert all(np.array_equal(a, w.numpy())
               for a, w in zip(encoder, game.entangled_encoders[0].weights))
    assert not all(np.array_equal(a, w.numpy())
                   for a, w in zip(decoder, game.disentangled_decoders[0].weights))
    assert not all(np.array_equal(a, w.numpy()) for a, w in zip(m, game.manipulation.weights))


@pytest.mark.slow
def test_killed_generation_resumes_to_the_uninterrupted_result(tmp_path):
    straight = _game()
    train_lib.train(straight, _stream, 4, tmp_path / "straight", 0, checkpoint_every=2,
                    progress=False)
    first = _game()
    train_lib.train(first, _stream, 2, tmp_path / "resumed", 0, checkpoint_every=2,
                    progress=False)
    second = _game(seed=5)            # a fresh process: other initial weights, then restored
    out = train_lib.train(second, _stream, 4, tmp_path / "resumed", 0, checkpoint_every=2,
                          progress=False)
    assert out["resumed_from"] == 2
    for a, b in zip(straight.manipulation.weights, second.manipulation.weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-3, atol=1e-5)  # CPU float noise


def test_artefact_round_trip_loads_as_the_modified_variant(tmp_path):
    data = _small_dsprites(tmp_path / "in")
    network = manipulation.manipulation_network(data.num_factors)
    out = artefact.save_manipulation(tmp_path / "art", network, {
        "dataset": "dsprites", "factor_sizes": list(data.factor_sizes), "eps": 0.1})
    modified = make_variant(data, "modified", artefact=str(out))
    factors = data.sample_factors(6, np.random.default_rng(0))
    expected = reflect_np(data.observations_from_factors(factors) + 0.1 * np.asarray(
        network(pipeline.scaled_factors(factors, data.factor_sizes))))
    np.testing.assert_allclose(modified.observations_from_factors(factors), expected, atol=1e-6)
    assert modified.describe()["variant"] == "modified"
    stronger = make_variant(data, "modified", artefact=str(out), eps=0.3)
    assert stronger.eps == 0.3
    # Official-format export and reload (grey levels, 1/255 resolution).
    path = export.export_official(modified, tmp_path / "exp" / dsprites.FILENAME,
                                  progress=False)
    again = dsprites.DSprites(source="file", data_dir=str(path.parent),
                              factor_sizes=SMALL_DSPRITES)
    every = np.arange(modified.num_images)
    np.testing.assert_allclose(again.images(every), modified.images(every),
                               atol=0.5 / 255 + 1e-6)


def test_bad_artefacts_are_clear_errors(tmp_path):
    data = _small_dsprites(tmp_path / "in")
    with pytest.raises(artefact.ArtefactError, match="metadata.json"):
        make_variant(data, "modified", artefact=str(tmp_path / "nothing"))
    with pytest.raises(ValueError, match="needs data.artefact"):
        make_variant(data, "modified")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "metadata.json").write_text("not json")
    with pytest.raises(artefact.ArtefactError, match="expected JSON"):
        make_variant(data, "modified", artefact=str(bad))
    (bad / artefact.WEIGHTS).write_bytes(b"garbage")
    sha = artefact.file_sha256(bad / artefact.WEIGHTS)
    (bad / "metadata.json").write_text(json.dumps({
        "schema_version": 1, "kind": "manipulation", "dataset": "shapes3d",
        "factor_sizes": [10, 10, 10, 8, 4, 15], "eps": 0.1, "weights_sha256": sha}))
    with pytest.raises(artefact.ArtefactError, match="made for shapes3d"):
        make_variant(data, "modified", artefact=str(bad))
    (bad / "metadata.json").write_text(json.dumps({
        "schema_version": 1, "kind": "manipulation", "dataset": "dsprites",
        "factor_sizes": list(data.factor_sizes), "eps": 3, "weights_sha256": sha}))
    with pytest.raises(artefact.ArtefactError, match="eps in"):
        make_variant(data, "modified", artefact=str(bad))
    (bad / "metadata.json").write_text(json.dumps({
        "schema_version": 1, "kind": "manipulation", "dataset": "dsprites",
        "factor_sizes": list(data.factor_sizes), "eps": 0.1, "weights_sha256": sha}))
    with pytest.raises(artefact.ArtefactError, match="weights of m"):
        make_variant(data, "modified", artefact=str(bad))
    noise = write_noise_artefact(tmp_path / "noise", "dsprites")
    with pytest.raises(artefact.ArtefactError, match="made for dsprites with factor sizes"):
        make_variant(data, "noisy", artefact=str(noise))   # full-size sizes, small data


def test_noise_artefact_is_the_noisy_variant(tmp_path):
    out = write_noise_artefact(tmp_path / "noise", "dsprites", eps=0.2, seed=4)
    loaded = load_data("dsprites", "noisy", "procedural", artefact=str(out))
    direct = NoisyData(dsprites.DSprites(source="procedural"), eps=0.2, seed=4)
    factors = direct.sample_factors(5, np.random.default_rng(1))
    np.testing.assert_array_equal(loaded.observations_from_factors(factors),
                                  direct.observations_from_factors(factors))
    with pytest.raises(ValueError, match="defines the 'noisy' variant"):
        load_data("dsprites", "modified", "procedural", artefact=str(out))
    with pytest.raises(ValueError, match="eps must be in"):
        write_noise_artefact(tmp_path / "n2", "dsprites", eps=1.5)


def test_losses_gradient_with_respect_to_the_target_is_what_m_learns():
    """The cross-entropy's gradient w.r.t. its target is minus the logit (the decoder's
    confidence, large on every background pixel); the squared error's is twice the
    decoder's error (small where it predicts well): why 'squared_error' is the default."""
    logits = tf.constant([[-6.0, -6.0, 4.0]])
    target = tf.Variable([[0.0, 0.05, 1.0]])
    grads = {}
    for name, loss in manipulation.RECONSTRUCTIONS.items():
        with tf.GradientTape() as tape:
            value = tf.reduce_sum(loss(target, logits))
        grads[name] = tape.gradient(value, target).numpy()[0]
    np.testing.assert_allclose(grads["bernoulli"], [6.0, 6.0, -4.0], rtol=1e-6)
    expected = 2.0 * (target.numpy()[0] - tf.sigmoid(logits).numpy()[0])
    np.testing.assert_allclose(grads["squared_error"], expected, rtol=1e-5)
    assert np.abs(grads["squared_error"]).max() < 0.1 < np.abs(grads["bernoulli"]).min()


def test_game_options_scale_init_penalise_the_mean_and_log_diagnostics():
    tf.keras.utils.set_random_seed(0)
    full = manipulation.manipulation_network(5)
    tf.keras.utils.set_random_seed(0)
    small = manipulation.manipulation_network(5, output_init_scale=0.1)
    last_full = full.get_layer("manipulation_decoder").layers[-1].get_weights()
    last_small = small.get_layer("manipulation_decoder").layers[-1].get_weights()
    for a, b in zip(last_full, last_small):
        np.testing.assert_allclose(b, 0.1 * a, rtol=1e-6)
    w = np.random.default_rng(0).random((64, 5)).astype(np.float32)
    assert (np.abs(np.asarray(small(w))).mean() < np.abs(np.asarray(full(w))).mean())
    with pytest.raises(ValueError, match="output_init_scale"):
        manipulation.manipulation_network(5, output_init_scale=0.0)

    game = _game()
    with pytest.raises(ValueError, match="reconstruction must be one of"):
        manipulation.ManipulationGame(game.manipulation, [(game.entangled_encoders[0],
                                      game.entangled_decoders[0])],
                                      [(game.disentangled_encoders[0],
                                        game.disentangled_decoders[0])], 0.1,
                                      reconstruction="l1")
    penalised = manipulation.ManipulationGame(
        game.manipulation, [(game.entangled_encoders[0], game.entangled_decoders[0])],
        [(game.disentangled_encoders[0], game.disentangled_decoders[0])], 0.1,
        latent_samples=2, mean_penalty=10.0)
    terms = penalised.train_step(next(iter(_stream(0))), tf.constant(0, tf.int64),
                                 tf.constant([0, 0], tf.int64))
    assert float(terms["loss"]) == pytest.approx(
        float(terms["reconstruction_entangled"]) - float(terms["reconstruction_disentangled"])
        + 10.0 * float(terms["mean_penalty"]), rel=1e-4)
    for name in ("m_mean_share", "m_saturated"):
        assert 0.0 <= float(terms[name]) <= 1.0
    # m of an untrained network is nearly the same pattern for every image
    assert float(terms["m_mean_share"]) > 0.5
    assert float(terms["scalar_weight_norm"]) > 0 and float(terms["scalar_std"]) >= 0


def test_the_neurons_own_optimizer_moves_its_weights_and_only_those():
    """generation.neuron_learning_rate_scale: the one neuron (m's direction in factor
    space) gets an Adam of its own at a multiple of m's rate; the rest of m keeps m's."""
    from models.optimizers import manipulation_adam
    from perturbations.generate import scaled_optimizer

    assert scaled_optimizer(manipulation_adam(1e-3), 1.0) is None     # the paper's setting
    faster = scaled_optimizer(manipulation_adam(1e-3, beta_2=0.99), 30.0)
    assert float(faster.learning_rate) == pytest.approx(3e-2) and faster.beta_2 == 0.99
    moved = {}
    for scale in (1.0, 100.0):
        game = _game()
        base = game.manipulation_optimizer
        game.neuron_optimizer = scaled_optimizer(base, scale)
        neuron = game.manipulation.get_layer("single_neuron")
        before = neuron.kernel.numpy().copy()
        others = [v.numpy().copy() for v in game._m_variables()]
        assert len(game.optimizers_list()) == (2 if scale == 1.0 else 3)
        terms = game.train_step(next(iter(_stream(0))), tf.constant(0, tf.int64),
                                tf.constant([0, 0], tf.int64))
        moved[scale] = np.abs(neuron.kernel.numpy() - before).max()
        assert not all(np.array_equal(a, v.numpy()) for a, v in zip(others, game._m_variables()))
        assert float(terms["scalar_weight_0"]) == pytest.approx(float(neuron.kernel[0, 0]),
                                                                abs=0.2)
    # Adam's first step moves each weight by about its learning rate.
    assert moved[1.0] == pytest.approx(1e-4, rel=0.5) and moved[100.0] == pytest.approx(
        1e-2, rel=0.5)


def _factors(n=512, seed=0):
    data = dsprites.DSprites(source="procedural")
    classes = data.sample_factors(n, np.random.default_rng(seed))
    return pipeline.scaled_factors(classes, data.factor_sizes)


def _pre_activation_spreads(network, factors):
    """std over `factors` of the single neuron's output and each hidden layer's
    pre-activation (activations switched off for the measurement)."""
    h = tf.constant(factors)
    decoder = network.get_layer("manipulation_decoder")
    layers = [network.get_layer("single_neuron")] + decoder.layers[1:-1]
    spreads = []
    for layer in layers:
        if layer.weights:
            saved, layer.activation = layer.activation, tf.keras.activations.linear
            spreads.append(float(tf.math.reduce_std(layer(h))))
            layer.activation = saved
        h = layer(h)
    return spreads


def test_unit_variance_init_gives_every_layer_unit_spread_and_keeps_the_directions():
    factors = _factors()
    tf.keras.utils.set_random_seed(0)
    glorot = manipulation.manipulation_network(5, output_init_scale=0.1)
    before = [w.numpy().copy() for w in glorot.weights]
    shrinking = _pre_activation_spreads(glorot, factors)
    assert len(shrinking) == 6 and shrinking[-1] < 0.1 * shrinking[1]   # the problem
    assert len(manipulation.hidden_relu_layers(glorot)) == 5
    scales = manipulation.unit_variance_init(glorot, factors)
    assert len(scales) == 6 and scales[0] == pytest.approx(shrinking[0], rel=1e-5)
    np.testing.assert_allclose(_pre_activation_spreads(glorot, factors), 1.0, rtol=1e-3)
    # on other factors of the same distribution too
    np.testing.assert_allclose(_pre_activation_spreads(glorot, _factors(seed=1)), 1.0,
                               rtol=0.15)
    after = [w.numpy() for w in glorot.weights]
    kernels = [(a, b) for a, b in zip(before, after) if a.ndim > 1]
    for a, b in kernels[:-1]:                       # scaled, not redrawn
        ratio = b.ravel()[np.abs(a.ravel()) > 1e-6] / a.ravel()[np.abs(a.ravel()) > 1e-6]
        np.testing.assert_allclose(ratio, ratio[0], rtol=1e-4)
    np.testing.assert_array_equal(kernels[-1][0], kernels[-1][1])   # output layer kept
    with pytest.raises(ValueError, match="constant over the 4 factor vectors"):
        manipulation.unit_variance_init(glorot, np.full((4, 5), 0.5, np.float32))


def test_a_dead_layer_is_counted_and_stops_the_generation_after_patience():
    game = _game()
    batch = next(iter(_stream(0)))
    alive = game.train_step(batch, tf.constant(0, tf.int64), tf.constant([0, 0], tf.int64))
    assert int(alive["m_dead_layers"]) == 0
    third = manipulation.hidden_relu_layers(game.manipulation)[3]
    kernel, bias = third.get_weights()
    third.set_weights([kernel, np.full_like(bias, -1e3)])      # no unit can fire
    dead = game.train_step(batch, tf.constant(1, tf.int64), tf.constant([0, 1], tf.int64))
    assert int(dead["m_dead_layers"]) == 1
    m = np.asarray(game.manipulation(_factors(16)))
    assert np.ptp(m, axis=0).max() == 0.0                      # one pattern for every w

    check = manipulation.dead_manipulation_check(patience=3)
    assert [check({"m_dead_layers": d}) for d in (1, 1, 0, 1, 1)] == [None] * 5
    assert "m died: 2 hidden layer(s)" in check({"m_dead_layers": 2})
    with pytest.raises(ValueError, match="patience"):
        manipulation.dead_manipulation_check(0)


def test_the_game_has_two_optimizers_and_the_neurons_direction_is_set_and_logged():
    import gin

    from models.configurables import configured_optimizer
    game = _game()
    assert game.manipulation_optimizer is not game.decoder_optimizer
    for optimizer in (game.manipulation_optimizer, game.decoder_optimizer):   # appendix B.1
        config = optimizer.get_config()
        assert (float(config["learning_rate"]), config["beta_1"], config["beta_2"],
                config["epsilon"]) == (pytest.approx(1e-4), 0.9, 0.999, 1e-7)
    gin.clear_config()
    gin.parse_config(["manipulation_adam.learning_rate = 0.002"])
    try:          # m's rate is bound, the decoders' keeps the paper's
        assert float(configured_optimizer("manipulation_adam").learning_rate) == \
            pytest.approx(0.002)
        assert float(configured_optimizer("game_decoder_adam").learning_rate) == \
            pytest.approx(1e-4)
    finally:
        gin.clear_config()

    tf.keras.utils.set_random_seed(0)
    network = manipulation.manipulation_network(2)
    kernel = network.get_layer("single_neuron").get_weights()[0][:, 0]
    weights = manipulation.set_neuron_direction(network, "diagonal")
    assert weights[0] == pytest.approx(weights[1])
    assert np.linalg.norm(weights) == pytest.approx(np.linalg.norm(kernel), rel=1e-6)
    assert float(manipulation.neuron_direction_deg(np.asarray(weights))) == pytest.approx(45)
    manipulation.set_neuron_direction(network, [0.0, -2.0])
    assert float(manipulation.neuron_direction_deg(
        network.get_layer("single_neuron").get_weights()[0][:, 0])) == pytest.approx(90)
    assert float(manipulation.neuron_direction_deg(np.array([-1.0, 1.0]))) == pytest.approx(135)
    for bad in ("random", [1.0], [0.0, 0.0], [np.nan, 1.0]):
        with pytest.raises(ValueError, match="neuron_direction: expected"):
            manipulation.set_neuron_direction(network, bad)
    # logged every step with two factors: the angle of the neuron's weights
    plane = manipulation.ManipulationGame(
        network, [(game.entangled_encoders[0], game.entangled_decoders[0])],
        [(game.disentangled_encoders[0], game.disentangled_decoders[0])], 0.1)
    factors = np.random.default_rng(0).random((8, 2)).astype(np.float32)
    terms = plane.diagnostics(factors, network(factors))
    assert float(terms["scalar_direction_deg"]) == pytest.approx(90, abs=1e-4)
    assert "scalar_direction_deg" not in game.diagnostics(
        np.zeros((8, 5), np.float32), tf.zeros((8, 64, 64, 1)))     # five factors: no plane


def test_the_naive_arm_moves_images_towards_the_entangled_reconstruction():
    """perturbations/naive.py with references whose reconstructions are known: the
    entangled side reconstructs every pixel as 0.8, the disentangled as 0.3, so the move
    is +1 wherever the pixel can rise (background) and 0 where it cannot (a foreground
    pixel is 1): never folded back towards the disentangled side. Swapping the sides
    gives the opposite move. matched_eps finds the strength of a target energy."""
    from benchmark.core.errors import ConfigError
    from benchmark.data.oracle import ORACLE_FIXED_FACTORS, mean_change
    from benchmark.data.subset import FactorSubset
    from benchmark.data.variants import AdditivePerturbation
    from perturbations.naive import NaiveData, matched_eps

    def encoder(x):
        return {"mean": tf.reduce_mean(x, axis=[1, 2, 3])[:, None]}

    def decoder_of(value):
        logit = float(np.log(value / (1 - value)))
        return lambda z: tf.zeros((tf.shape(z)[0], 64, 64, 1)) + logit
    data = FactorSubset(dsprites.DSprites(source="procedural"), ORACLE_FIXED_FACTORS)
    naive = NaiveData(data, 0.2, [(encoder, decoder_of(0.8))], [(encoder, decoder_of(0.3))])
    factors = data.sample_factors(16, np.random.default_rng(0))
    moved = naive.observations_from_factors(factors)
    original = data.observations_from_factors(factors)
    assert set(np.unique(original)) == {0.0, 1.0}
    np.testing.assert_allclose(naive.delta(factors), 1.0 - original, atol=1e-5)
    np.testing.assert_allclose(moved, original + 0.2 * (1.0 - original), atol=1e-6)
    swapped = NaiveData(data, 0.2, [(encoder, decoder_of(0.3))], [(encoder, decoder_of(0.8))])
    np.testing.assert_allclose(swapped.delta(factors), -original, atol=1e-5)
    # every pixel moves towards the entangled side (r_ent - r_dis = +0.5) or stays
    assert (naive.delta(factors) >= 0).all() and (swapped.delta(factors) <= 0).all()
    assert np.abs(swapped.observations_from_factors(factors) - moved).max() > 0.1
    target = mean_change(naive.at(0.1), power=2)
    assert matched_eps(naive.at, target) == pytest.approx(0.1, rel=1e-3)
    with pytest.raises(ValueError, match="no eps in"):
        matched_eps(naive.at, 10.0)
    # the bisection reuses the deltas of eps 1, so an arm whose delta changes with eps
    # is refused rather than matched wrongly
    def growing(eps):
        return AdditivePerturbation(data, lambda f: np.full((len(f), 64, 64, 1), eps,
                                                            np.float32), eps)
    with pytest.raises(ValueError, match="depends on eps"):
        matched_eps(growing, target)
    with pytest.raises(ConfigError, match="needs entangled and disentangled"):
        NaiveData(data, 0.1, [], [])
