"""Running a command as a user calls it: `python -m MODULE ARGS` in a subprocess, from the
repository root unless told otherwise, with the repository on PYTHONPATH."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def environment(**extra) -> dict:
    """os.environ with the repository first on PYTHONPATH, TensorFlow quiet, and `extra`."""
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **extra,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def python_m(module: str, *args, cwd=ROOT, timeout: float = 600, **env
             ) -> subprocess.CompletedProcess:
    """The finished `python -m module args` (text stdout and stderr captured)."""
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=cwd,
                          env=environment(**env), capture_output=True, text=True,
                          timeout=timeout)
