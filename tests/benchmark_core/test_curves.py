import json
import subprocess
import sys

import pytest
import tensorflow as tf

from benchmark.runs import curves


def _write_run(run_dir, values):
    writer = tf.summary.create_file_writer(str(run_dir / "tb"))
    with writer.as_default():
        for step, (loss, accuracy) in values.items():
            tf.summary.scalar("loss/loss", loss, step=step)
            tf.summary.scalar("loss/accuracy", accuracy, step=step)
            tf.summary.scalar("throughput/images_per_second", 100.0, step=step)
    writer.close()


def test_scalar_curves_read_back_what_training_logged(tmp_path):
    run = tmp_path / "study" / "runs" / "pcl_seed0"
    _write_run(run, {200: (0.6, 0.7), 100: (0.693, 0.5)})
    got = curves.scalar_curves(run, ["loss/accuracy"])
    assert got == {"loss/accuracy": [(100, pytest.approx(0.5)), (200, pytest.approx(0.7))]}
    assert curves.run_directories(tmp_path / "study") == [run]
    with pytest.raises(ValueError, match="no scalar"):
        curves.scalar_curves(run, ["loss/kl"])
    assert curves.scalar_curves(run, ["loss/kl", "loss/loss"], require_all=False) == {
        "loss/loss": [(100, pytest.approx(0.693)), (200, pytest.approx(0.6))]}
    with pytest.raises(ValueError, match="no TensorBoard event file"):
        curves.scalar_curves(tmp_path, None)


@pytest.mark.slow
def test_cli_prints_and_writes_loss_curves(tmp_path):
    run = tmp_path / "run"
    _write_run(run, {100: (0.693, 0.5)})
    out = tmp_path / "curves.json"
    done = subprocess.run([sys.executable, "-m", "benchmark.curves", str(run), f"--out={out}"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "loss/accuracy  100: 0.500" in done.stdout
    record = json.loads(out.read_text())
    assert set(record[str(run)]) == {"loss/loss", "loss/accuracy"}     # loss/* only
    bad = subprocess.run([sys.executable, "-m", "benchmark.curves", str(tmp_path / "none")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("error:")
