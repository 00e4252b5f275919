"""TensorFlow's start-up quiet, so that a command's first line is its own.

TensorFlow reads its C++ log level once, when it is first imported, and since 2.17 it also
writes lines that level does not silence ("WARNING: All log messages before
absl::InitializeLog() ...", "oneDNN custom operations are on", "Could not find cuda
drivers"; tensorflow/tensorflow#79029, #100442) straight to file descriptor 2 while it is
imported. `install()` (called by the suite's packages on import) sets the log level unless
the user set one, and silences descriptor 2 for the duration of TensorFlow's own import
only: a Python error in that import still propagates with its traceback, printed after
the descriptor is back. BENCHMARK_TF_STARTUP_LOGS=1 keeps TensorFlow's start-up lines.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys

SHOW_ENV = "BENCHMARK_TF_STARTUP_LOGS"


@contextlib.contextmanager
def silenced_stderr_descriptor():
    """File descriptor 2 points at /dev/null for the block (C++ writes included)."""
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(null)
        os.close(saved)


class _QuietTensorFlowImport:
    """A meta-path finder that finds `tensorflow` as usual, its loader wrapped so that the
    module executes with descriptor 2 silenced; it removes itself on first use."""

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        execute = spec.loader.exec_module

        def quiet_exec(module):
            with silenced_stderr_descriptor():
                execute(module)
        spec.loader.exec_module = quiet_exec
        return spec


def install() -> None:
    """Sets TF_CPP_MIN_LOG_LEVEL to 3 unless set, and quiets TensorFlow's import unless it
    was imported already or BENCHMARK_TF_STARTUP_LOGS=1."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if (os.environ.get(SHOW_ENV) == "1" or "tensorflow" in sys.modules
            or any(isinstance(f, _QuietTensorFlowImport) for f in sys.meta_path)):
        return
    sys.meta_path.insert(0, _QuietTensorFlowImport())
