"""The context every timing is recorded with (benchmark/core/machine.py), and the repeat timer
of `benchmark.speed train` (no timing is asserted: speed is measured by benchmarks)."""

import hashlib
import time

import numpy as np
import pytest

from benchmark.core import machine
from benchmark.studies import speed
from tests.cli import python_m


def test_cpu_description_names_the_cpu_and_known_flags():
    cpu = machine.cpu_description()
    assert cpu["model"] and cpu["cores"] >= 1
    assert set(cpu["vector_flags"]) <= set(machine.VECTOR_FLAGS)
    assert cpu["model"] in machine.header()


def test_load_meter_counts_this_process_as_own_work_not_foreign():
    """own_cores is this process's CPU time over the block's wall time, whatever else the
    machine runs (a fixed threshold on it failed on a loaded CI machine: 0.26 cores)."""
    cpu_before = time.process_time()
    with machine.LoadMeter() as load:
        data = b"x" * 1_000_000
        for _ in range(300):
            data = hashlib.sha256(data).digest() * 31_250
    cpu_spent = time.process_time() - cpu_before
    result = load.result
    assert result["seconds"] > 0 and result["own_cores"] > 0
    assert result["own_cores"] * result["seconds"] == pytest.approx(cpu_spent, rel=0.2,
                                                                    abs=0.02)
    if "busy_cores" in result:                 # Linux: /proc/stat is readable
        assert 0.0 <= result["foreign_cores"] <= (machine.cpu_description()["cores"] or 1)
    assert "cores busy" in machine.describe_load(result)


def test_run_record_keeps_the_cpu_and_the_work_a_run_did():
    meter = machine.LoadMeter().start()
    data = b"x" * 1_000_000
    for _ in range(100):
        data = hashlib.sha256(data).digest() * 31_250
    load = meter.read()
    record = machine.run_record(load, threads=2)
    assert record["cpu"] == machine.cpu_description()["model"] and record["threads"] == 2
    assert record["cpu_seconds"] == pytest.approx(load["own_cores"] * load["seconds"])
    assert record["cpu_seconds"] > 0 and record["own_cores"] == load["own_cores"]


def test_time_steps_runs_every_repeat_on_its_own_batches():
    seen = []

    def step(batch, i):
        seen.append(batch)
        return {"loss": np.float32(0.0)}

    seconds = speed.time_steps(step, batches=list(range(10)), repeats=3, steps=4)
    assert len(seconds) == 3 and all(s >= 0 for s in seconds)
    assert seen == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1]


@pytest.mark.slow
def test_the_train_benchmark_runs_as_a_user_calls_it(tmp_path):
    """A tiny `benchmark.speed train` as a subprocess (no timing asserted)."""
    out = tmp_path / "speed.json"
    result = python_m("benchmark.speed", "train", "--model=ae", "--train_steps=1", "--repeats=1",
                   f"--out={out}")
    assert result.returncode == 0, result.stderr[-2000:]
    text = out.read_text()
    assert '"ae"' in text and machine.cpu_description()["model"] in text


@pytest.mark.slow
def test_the_end_to_end_benchmark_runs_as_a_user_calls_it(tmp_path):
    """A tiny `benchmark.speed e2e` as a subprocess: the pure step and the runner's loop of
    a pair model on a materialised variant (no timing asserted)."""
    import json
    out = tmp_path / "e2e.json"
    result = python_m("benchmark.speed", "e2e", "--model=slowvae", "--variants=wave",
                      "--e2e_steps=10", f"--out={out}")
    assert result.returncode == 0, result.stderr[-2000:]
    (row,) = json.loads(out.read_text())["rows"]
    assert row["input_kind"] == "pairs" and row["store"] == "memory" and row["steps"] == 10
    assert row["pure_ms"] > 0 and row["loop_ms"] > 0 and row["first_step_seconds"] > 0
    bad = python_m("benchmark.speed", "e2e", "--variants=wavy", f"--out={out}")
    assert bad.returncode == 2 and "expected names among original, noisy, wave" in bad.stderr
