"""Bad codes files and oversized codes are one clear error (issue 19, item 9)."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from benchmark.metrics import MetricInputError, codes as codes_lib
from benchmark.metrics.codes import load_codes

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _archive(tmp_path, compressed):
    rng = np.random.default_rng(0)
    path = tmp_path / ("c.npz" if compressed else "u.npz")
    save = np.savez_compressed if compressed else np.savez
    save(path, factors=rng.integers(0, 3, (200, 2)), codes=rng.normal(size=(200, 4)))
    return path.read_bytes()


@pytest.mark.parametrize("compressed", [False, True])
def test_truncated_and_corrupt_codes_files_are_one_clear_error(tmp_path, compressed):
    whole = _archive(tmp_path, compressed)
    rng = np.random.default_rng(1)
    broken = [whole[:cut] for cut in rng.integers(1, len(whole), 25)]
    for _ in range(25):
        corrupt = bytearray(whole)
        for position in rng.integers(0, len(corrupt), 6):
            corrupt[position] ^= 0xFF
        broken.append(bytes(corrupt))
    for i, content in enumerate(broken):
        path = tmp_path / f"b{i}.npz"
        path.write_bytes(content)
        try:
            load_codes(str(path))                   # a flip in padding may leave it valid
        except ValueError as error:
            assert str(error).startswith(str(path)), error


def test_cli_on_a_truncated_file_exits_2_with_one_line(tmp_path):
    path = tmp_path / "cut.npz"
    path.write_bytes(_archive(tmp_path, False)[:700])
    result = subprocess.run([sys.executable, "-m", "benchmark.metrics", "evaluate",
                             f"--codes={path}", "--metrics=mig"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert f"error: {path}: expected an .npz with the arrays 'factors', 'codes', found an " \
        "unreadable file (truncated or corrupt?" in result.stderr


def test_cli_never_suggests_unpickling_a_data_file(tmp_path):
    path = tmp_path / "random.npz"
    path.write_bytes(np.random.default_rng(0).bytes(4096))
    result = subprocess.run([sys.executable, "-m", "benchmark.metrics", "evaluate",
                             f"--codes={path}", "--metrics=mig"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert "no .npz archive" in result.stderr.splitlines()[-1]
    assert "allow_pickle" not in result.stderr


def test_huge_codes_are_refused_before_any_work():
    huge = np.broadcast_to(np.float32(0.5), (200_000, 200))      # 4e7 values, no memory
    factors = np.tile(np.arange(4), 50_000).reshape(200_000, 1)
    with pytest.raises(MetricInputError, match=r"evaluate_codes: codes of shape \(200000, 200\) "
                                               r"hold 40,000,000 values, more than the limit "
                                               r"of 5,000,000"):
        codes_lib.check_codes(factors, huge, 10, "evaluate_codes")
    from benchmark.metrics import evaluate_codes
    with pytest.raises(MetricInputError, match="BENCHMARK_MAX_CODE_VALUES"):
        evaluate_codes(factors, huge, names=["mig"])


def test_the_size_limit_is_configurable(monkeypatch):
    rng = np.random.default_rng(0)
    factors, codes = rng.integers(0, 3, (100, 2)), rng.normal(size=(100, 4))
    assert codes_lib.check_codes(factors, codes)[1].shape == (100, 4)
    with pytest.raises(MetricInputError, match="400 values, more than the limit of 399"):
        codes_lib.check_codes(factors, codes, max_values=399)
    monkeypatch.setenv(codes_lib.MAX_CODE_VALUES_ENV, "300")
    with pytest.raises(MetricInputError, match="limit of 300"):
        codes_lib.check_codes(factors, codes)
    assert codes_lib.check_codes(factors, codes, max_values=400)[1].shape == (100, 4)
    monkeypatch.setenv(codes_lib.MAX_CODE_VALUES_ENV, "lots")
    with pytest.raises(MetricInputError, match="expected a positive integer .* 'lots'"):
        codes_lib.check_codes(factors, codes)
