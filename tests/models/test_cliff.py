import numpy as np
import pytest
import tensorflow as tf

from models.cliff import cliff_terms, hausdorff_factorized_support


def _cliffs(n, rng):
    """Independent factors, each uniform on two separated intervals: axis-aligned cliffs."""
    halves = rng.integers(0, 2, (n, 2))
    return (halves * 2.0 + rng.uniform(0, 1, (n, 2))).astype(np.float64)


def test_cliff_terms_prefer_axis_aligned_cliffs():
    rng = np.random.default_rng(0)
    aligned = _cliffs(600, rng)
    angle = np.pi / 4
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    rotated = aligned @ rotation.T                        # the same cliffs, off the axes
    a = {k: float(v) for k, v in cliff_terms(tf.constant(aligned), sigma=0.2).items()}
    r = {k: float(v) for k, v in cliff_terms(tf.constant(rotated), sigma=0.2).items()}
    assert a["uni"] < r["uni"] and a["biv"] < r["biv"]
    assert all(np.isfinite(v) for v in list(a.values()) + list(r.values()))


def test_kl_to_uniform_penalises_collapse():
    rng = np.random.default_rng(1)
    spread = rng.uniform(-1, 1, (500, 2))
    collapsed = np.concatenate([np.zeros((495, 2)), rng.normal(0, 1, (5, 2))])
    kl = [float(cliff_terms(tf.constant(z), sigma=0.2)["kl_uni"]) for z in (spread, collapsed)]
    assert kl[0] < kl[1] and kl[0] < 0.2


def test_hfs_hausdorff_distance_on_small_point_sets():
    grid = np.array([[x, y] for x in (0.0, 1.0, 2.0) for y in (0.0, 3.0)])
    assert float(hausdorff_factorized_support(tf.constant(grid))) == pytest.approx(0, abs=1e-5)
    diagonal = tf.constant([[0.0, 0.0], [1.0, 1.0]])
    # product support adds (0, 1) and (1, 0), each at distance 1 from the joint support
    assert float(hausdorff_factorized_support(diagonal)) == pytest.approx(1.0, abs=1e-5)
    three = tf.constant([[0.0, 0.0, 5.0], [1.0, 1.0, 5.0]])    # pairs (0,1) only correlated
    assert float(hausdorff_factorized_support(three)) == pytest.approx(1.0, abs=1e-5)
    wide = tf.constant([[0.0, 0.0], [2.0, 2.0]])                # squared distance, as Roth's
    assert float(hausdorff_factorized_support(wide)) == pytest.approx(4.0, abs=1e-5)


def test_hfs_scale_term_penalises_a_collapsed_code_only():
    from models.cliff import minimal_support_scale
    collapsed = tf.fill((4, 3), 0.5)                     # max 0.5 < 1, min 0.5 > 0: 1 each
    assert float(minimal_support_scale(collapsed)) == pytest.approx(4.0)
    spanning = tf.constant([[0.0, 1.0, 0.3], [-0.2, 1.5, 0.0]])
    assert float(minimal_support_scale(spanning)) == 0.0


@pytest.mark.parametrize("method", ["cliff_vae", "cliff_ae", "hfs_vae"])
def test_cliff_and_hfs_models_train(method):
    from models.registry import make_model
    model = make_model((64, 64, 1), method=method, num_latents=3)
    images = tf.constant(np.random.default_rng(0).uniform(0, 1, (8, 64, 64, 1)), tf.float32)
    with tf.GradientTape() as tape:
        terms = model.loss_terms(images, tf.constant(0, tf.int64), tf.constant([0, 1]))
    grads = tape.gradient(terms["loss"], model.trainable_variables)
    assert all(np.isfinite(float(v)) for v in terms.values())
    assert all(g is not None for g in grads)
