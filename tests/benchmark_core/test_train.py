import numpy as np
import pytest
import tensorflow as tf

from benchmark.data import dsprites, pipeline
from benchmark.runs import train as train_lib
from models import architectures, vae
from models.optimizers import dlib_adam


@pytest.fixture(scope="module")
def data():
    return dsprites.DSprites(source="procedural")


def _model():
    tf.keras.utils.set_random_seed(0)
    return vae.VAE(architectures.conv_encoder((64, 64, 1), 3),
                   architectures.conv_decoder(3, (64, 64, 1)), vae.beta_vae(4.0),
                   optimizer=dlib_adam(1e-3))


class Killed(Exception):
    pass


def _run(data, workdir, steps, kill_at=None):
    def stream(start):
        batches = pipeline.image_dataset(data, batch_size=8, seed=5, start_batch=start)
        for index, batch in enumerate(batches, start):
            if index == kill_at:
                raise Killed(f"killed before step {index}")
            yield batch

    model = _model()
    result = train_lib.train(model, stream, steps, workdir, seed=5, checkpoint_every=2,
                             log_every=2, progress=False)
    return model, result


def test_resumed_run_equals_uninterrupted_run(data, tmp_path):
    straight, result = _run(data, tmp_path / "straight", 6)
    assert result["steps"] == 6 and result["resumed_from"] == 0
    with pytest.raises(Killed):       # dies during step 4, after the checkpoint of step 2
        _run(data, tmp_path / "resumed", 6, kill_at=3)
    resumed, second = _run(data, tmp_path / "resumed", 6)
    assert second["resumed_from"] == 2
    for a, b in zip(straight.trainable_variables, resumed.trainable_variables):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-6)
    for name, value in result["final_terms"].items():
        assert second["final_terms"][name] == pytest.approx(value, rel=1e-4)
    assert list((tmp_path / "straight" / "tb").iterdir())


def test_finished_run_does_not_train_again_and_keeps_its_final_terms(data, tmp_path):
    _, first = _run(data, tmp_path, 2)
    _, again = _run(data, tmp_path, 2)
    assert again["resumed_from"] == 2 and again["steps"] == 2
    assert set(first["final_terms"]) >= {"loss", "reconstruction", "kl"}
    assert again["final_terms"] == first["final_terms"]      # kept with the checkpoint


def test_nan_loss_stops_with_step_and_term(data, tmp_path):
    model = _model()
    nan_images = pipeline.image_dataset(data, batch_size=8, seed=0).map(lambda x: x * np.nan)
    with pytest.raises(train_lib.TrainingDiverged, match=r"step 0: loss term '\w+' is nan"):
        train_lib.train(model, lambda start: nan_images, 4, tmp_path, seed=0, progress=False)
    assert not list((tmp_path / "checkpoints").glob("ckpt-*"))


def test_stop_check_stops_at_the_step_it_names_with_its_reason(data, tmp_path):
    seen = []

    def stop_at_third(terms):
        seen.append(sorted(terms))
        return "the check says so" if len(seen) == 3 else None

    images = pipeline.image_dataset(data, batch_size=8, seed=0)
    with pytest.raises(train_lib.TrainingDiverged, match=r"step 2: the check says so"):
        train_lib.train(_model(), lambda start: images, 10, tmp_path, seed=0,
                        checkpoint_every=1, progress=False, stop_check=stop_at_third)
    assert "loss" in seen[0]
    # steps 0 and 1 were checkpointed; the stopped step was not
    assert sorted(p.name for p in (tmp_path / "checkpoints").glob("ckpt-*.index")) == [
        "ckpt-1.index", "ckpt-2.index"]
