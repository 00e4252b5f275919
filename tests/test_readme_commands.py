"""Every command of the README's shell blocks runs, as written, from a fresh checkout (issue
30 item 2): the repository's tracked files copied into a temporary directory (what `git
clone` gives, with the working tree's edits), each command run there as a subprocess with
its own arguments first and, where the command trains, tiny-scale settings after them
(gin bindings given later win; a flag given twice takes the last). A command that needs
what a clone lacks (a checkpoint, a file outside git) fails here as it would for a user.

The audit runs with --dry_run against its default reference, the published geometry
battery (the plan needs that reference's runs in the checkout); the same command trains
and decides at tiny scale in tests/benchmark_core/test_audit.py."""

import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.cli import ROOT, environment

README = (ROOT / "README.md").read_text(encoding="utf-8")

TINY_RUN = ["run.steps = 4", "run.batch_size = 8", "run.metric_points = 300",
            "run.metrics = ['mig']", "run.health_points = 32", "run.figures = False",
            "run.checkpoint_every = 2"]
#: tiny-scale settings appended to each module's README command
TINY = {
    "benchmark.run": [f"--gin_bindings={b}" for b in TINY_RUN],
    "benchmark.study": [f"--gin_bindings={b}" for b in (
        "study.seeds = [0]", "study.output_dir = 'runs/readme_study'",
        "study.variants = ['original', 'wave@0.3']", "study.hypotheses = []",
        f"study.bindings = {[*TINY_RUN, 'model.num_latents = 2']!r}")],
    "perturbations.generate": [f"--gin_bindings={b}" for b in (
        f"generation.reference_bindings = {TINY_RUN!r}", "generation.reference_seeds = [0, 1]",
        "generation.steps = 3", "generation.batch_size = 4", "generation.latent_samples = 2",
        "generation.checkpoint_every = 2", "generation.evidence_points = 300",
        "generation.eps_sweep = []", "generation.gate_steps = 0")],
    "benchmark.audit": ["--dry_run"],
    "benchmark.audit export": ["--seeds=0", "--strengths=0.1"],
    "benchmark.audit score": [],
}


def readme_commands() -> list[str]:
    """The `python -m ...` lines of the README's shell blocks, continuations joined and
    comments dropped; '[--opt]' (optional) becomes --opt."""
    found = []
    for block in re.findall(r"```(?:bash|sh|shell)\n(.*?)```", README, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip()
            if line.startswith("python -m "):
                found.append(re.sub(r"\[(--[^\]]*)\]", r"\1", line))
    return found


COMMANDS = readme_commands()


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> pathlib.Path:
    """The repository's tracked files, as a fresh clone has them (no runs/, no
    checkpoints, nothing git ignores)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    target = tmp_path_factory.mktemp("clone")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def test_the_readme_has_its_commands():
    modules = {shlex.split(c)[2] for c in COMMANDS}
    assert {"benchmark.run", "perturbations.generate", "benchmark.audit",
            "benchmark.study", "benchmark.report"} <= modules


def _key(words: list[str]) -> str:
    """'benchmark.audit export' for a subcommand, else the module."""
    if len(words) > 3 and not words[3].startswith("-"):
        return f"{words[2]} {words[3]}"
    return words[2]


def _tiny(words: list[str], checkout: pathlib.Path) -> list[str]:
    """A README command's arguments at tiny scale: --workers=N (a placeholder) becomes 1,
    a directory under /tmp moves into the checkout, and the module's TINY settings
    follow."""
    args = [("--workers=1" if w == "--workers=N" else
             re.sub(r"=/tmp/", f"={checkout}/tmp/", w)) for w in words[3:]]
    return [*args, *TINY.get(_key(words), [])]


def _write_codes(export: pathlib.Path) -> None:
    """The user's step between `audit export` and `audit score`: codes of every exported
    image, here the top two principal components of the pixels (numpy only)."""
    manifest = json.loads((export / "manifest.json").read_text())
    for entry in manifest["arms"].values():
        with np.load(export / entry["file"], allow_pickle=False) as f:
            pixels = f["imgs"].reshape(len(f["imgs"]), -1).astype(np.float64)
        centred = pixels - pixels.mean(axis=0)
        codes = centred @ np.linalg.svd(centred, full_matrices=False)[2][:2].T
        for target in entry["codes"]:
            (export / target).parent.mkdir(parents=True, exist_ok=True)
            np.savez(export / target, codes=codes)


def _run(words: list[str], checkout: pathlib.Path) -> subprocess.CompletedProcess:
    """The command as typed (`python -m ...`) in a shell where the README's environment is
    active (`source .venv/bin/activate`: its bin/ first on PATH): `python` is found on
    PATH, not given as this interpreter's path."""
    venv_bin = str(pathlib.Path(sys.executable).parent)
    env = {**environment(), "PYTHONPATH": str(checkout),
           "PATH": os.pathsep.join([venv_bin, os.environ.get("PATH", "")]),
           "VIRTUAL_ENV": str(pathlib.Path(venv_bin).parent)}
    assert words[0] == "python", words
    return subprocess.run([shutil.which("python", path=env["PATH"]), "-m", words[2],
                           *_tiny(words, checkout)], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=900)


def test_the_readme_says_how_to_run_its_commands_after_the_two():
    two = README.index("make test ")
    note = README.index("source .venv/bin/activate")
    assert two < note < README.index("python -m "), "the note must come before any command"


#: the README's `audit score` needs what its `audit export` wrote: it runs in that
#: command's test, right after it (one export, whichever worker runs it)
SCORE = next(c for c in COMMANDS if c.startswith("python -m benchmark.audit score"))


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c in COMMANDS if c != SCORE])
def test_every_readme_command_runs_from_a_fresh_checkout(command, checkout):
    words = shlex.split(command)
    if words[2] == "benchmark.study" and "--backend=ray" in words:
        words.remove("--backend=ray")      # the Ray backend: tests/benchmark_core/test_study_ray.py
    result = _run(words, checkout)
    assert result.returncode == 0, f"`{command}` from a fresh checkout:\n{result.stderr[-3000:]}"
    if _key(words) == "benchmark.audit":
        assert "audit plan:" in result.stdout and "finished" in result.stdout
    if _key(words) == "benchmark.audit export":
        score = shlex.split(SCORE)
        _write_codes(checkout / next(w.split("=", 1)[1] for w in score
                                     if w.startswith("--export=")))
        scored = _run(score, checkout)
        assert scored.returncode == 0, f"`{SCORE}` from a fresh checkout, after `{command}`:" \
                                       f"\n{scored.stderr[-3000:]}"
        assert "Verdict:" in scored.stdout
