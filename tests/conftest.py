"""Shared test set-up: quiet TensorFlow, no official data directory from the environment."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: an end-to-end test of several seconds or more (training, a "
        "study, a subprocess command); `make test` skips them, `make test-slow` runs them")


@pytest.fixture(scope="session", autouse=True)
def _private_render_cache(tmp_path_factory):
    """Each test session casts its own Shapes3D geometry cache (never a stale user one)."""
    os.environ["DISENTANGLE_BENCH_CACHE"] = str(tmp_path_factory.mktemp("render-cache"))


@pytest.fixture(autouse=True)
def _no_user_data_dir(monkeypatch):
    """Tests never pick up a developer's real dataset files."""
    monkeypatch.delenv("DISENTANGLEMENT_LIB_DATA", raising=False)
