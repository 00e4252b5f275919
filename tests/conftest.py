"""Shared test set-up: quiet TensorFlow, no official data directory from the environment."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _no_user_data_dir(monkeypatch):
    """Tests never pick up a developer's real dataset files."""
    monkeypatch.delenv("DISENTANGLEMENT_LIB_DATA", raising=False)
