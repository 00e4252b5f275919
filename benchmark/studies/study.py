"""python -m benchmark.study --gin_file=gin_configs/studies/NAME.gin [--backend=local|ray]
[--workers=N] [--address=ADDR] [--retry_failed] [--dry_run]

A study is a grid of runs, models x datasets x variants x seeds (x values of a line-searched
hyperparameter), each executed by the runner (`python -m benchmark.run`, one process per
run, so gin state never leaks between runs) into
    <study.output_dir>/runs/<model>_<dataset>_<variant>[_<param>=<value>]_seed<S>/
A run whose results.json exists and whose configuration fingerprint
(benchmark/runs/fingerprint.py) is the one the grid asks for is finished and skipped, so an
interrupted study is resumed, and an extended grid trains only what is new; a run directory
holding another configuration (the study's settings changed) stops the study before it
trains anything, with the differing bindings of each such run. A run that fails is
recorded in <output_dir>/failed.json with the tail of its error and skipped on later
invocations until --retry_failed. One study writes an output directory at a time
(benchmark/core/lock.py); failed.json and study.json are merged with what is there (study.json
keeps every run it ever listed and the earlier settings), never blindly replaced.
The local backend runs `workers` runs at a time; --backend=ray sends the
same commands to a Ray cluster (the optional extra `pip install .[ray]`), started on this
machine and bound to localhost unless --address names a cluster.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import copy
import dataclasses
import json
import os
import pathlib
import subprocess
import sys
import time

import gin
from absl import app, flags, logging
from tqdm import tqdm

from benchmark.core import config
from benchmark.core.arm_label import ArmLabel, base_of
from benchmark.core.atomic import write_json
from benchmark.core.errors import USER_ERROR_EXIT, ConfigError, cli_main, user_errors
from benchmark.core.lock import LOCKED_MARK, directory_lock, is_locked
from benchmark.core.processes import (_STOPPING, end_with_parent, run_batch, run_in_worker,
                                 run_one, stop_runs)
from benchmark.data import ARTEFACT_VARIANTS, VARIANTS
from benchmark.data.change import change_path
from benchmark.metrics import alignment as alignment_lib
from benchmark.metrics.codes import MetricInputError
from benchmark.runs import fingerprint as fingerprint_lib
from benchmark.runs import results as results_lib
from benchmark.statistics import hypotheses as hypotheses_lib
from benchmark.studies.report_data import METRICS

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command, so that
    importing this module next to another command's flags never clashes)."""
    config.define_gin_flags("study.seeds = [0]")
    flags.DEFINE_enum("backend", "local", ["local", "ray"], "Where the runs execute.")
    flags.DEFINE_integer("workers", 1, "Runs at a time (local backend; each run uses all cores "
                         "it is given, so 1 is right on a small machine).",
                         lower_bound=1)
    flags.DEFINE_string("address", None, "Ray cluster address (default: a local Ray instance "
                        "on this machine, bound to localhost).")
    flags.DEFINE_boolean("retry_failed", False, "Run again the runs recorded as failed.")
    flags.DEFINE_boolean("dry_run", False, "List the runs and their state; train nothing.")
    flags.DEFINE_integer("runs_per_process", 1, "Local backend: runs one process trains in "
                         "sequence (benchmark/runs/worker.py), paying TensorFlow's start once; "
                         "each run gives the numbers it gives alone. 1: a process per run.",
                         lower_bound=1)


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """One cell of the grid: where it goes and the runner arguments that make it."""
    name: str
    gin_files: tuple
    bindings: tuple

    def command(self, output_dir: pathlib.Path) -> list[str]:
        return [sys.executable, "-m", "benchmark.run",
                *[f"--gin_file={f}" for f in self.gin_files],
                *[f"--gin_bindings={b}" for b in self.bindings],
                f"--output_dir={output_dir / 'runs' / self.name}"]


@dataclasses.dataclass(frozen=True)
class StudySettings:
    """A study's checked grid (`study_settings` builds it from the gin `study.*` bindings
    and says more of each setting); `record()` is the form study.json keeps.

    The optional settings are empty (None, '', {} or ()) when not set, and then absent
    from the record, so that studies without them keep their study.json unchanged."""
    name: str
    """The study's name (any text): the title of its report and its directory lock."""
    output_dir: str
    """The study directory: runs/<run name>/, study.json, failed.json, samples/."""
    models: dict
    """{model name: gin file}, at least one; '{dataset}' in a path is replaced by the
    dataset's name."""
    datasets: tuple
    """Dataset names the grid trains on (e.g. ('dsprites',))."""
    variants: tuple
    """Dataset variants (benchmark.data.VARIANTS), each optionally with a strength
    ('modified@0.2'); those that load an artefact have one in `artefacts`."""
    artefacts: dict
    """{dataset: {base variant: artefact directory}} for the variants that load one."""
    seeds: tuple
    """Run seeds (ints, at least one); the grid is seed-major in this order."""
    line_search: dict
    """{model name: (gin parameter, [values])}: those models train at each value, the
    others at their config's; every name is one of `models`."""
    bindings: tuple
    """Gin bindings applied to every run (e.g. 'run.steps = 5000')."""
    source: str
    """Where the datasets' images come from (data.source: 'auto', 'file', 'procedural')."""
    model_variants: dict = dataclasses.field(default_factory=dict)
    """{model name: [variants]}: a model trained on only these (a non-empty subset of
    `variants`); {}: every model on every variant."""
    cell_seeds: dict = dataclasses.field(default_factory=dict)
    """{'model' or 'model/variant': [seeds]}: fewer seeds (a non-empty subset of `seeds`)
    for a model or one of its cells, the more specific key first; {}: `seeds` for all."""
    start_from: str | None = None
    """The absolute path of a study directory (with runs/) whose namesake runs this
    study's runs start from (run.start_from); None: every run from scratch."""
    battery: dict | None = None
    """What the arms mean when the study is an audit's reference ({'manipulated',
    'controls', and optionally 'sweep', 'plane'}: `check_battery`); None: no battery."""
    scope: str = ""
    """What the study can and cannot show at its scale, a sentence or two; '': none."""
    hypotheses: tuple = ()
    """Pre-registered hypotheses, normalised and checked against the grid
    (benchmark/statistics/hypotheses.py); (): none."""

    def record(self) -> dict:
        """{setting: value} as study.json keeps it: sequences as lists, the optional
        settings only when set (a copy: changing it leaves these settings as they are)."""
        out = dict(name=self.name, output_dir=self.output_dir, models=self.models,
                   datasets=list(self.datasets), variants=list(self.variants),
                   artefacts=self.artefacts, seeds=list(self.seeds),
                   line_search=self.line_search, bindings=list(self.bindings),
                   source=self.source)
        if self.model_variants:
            out["model_variants"] = self.model_variants
        if self.cell_seeds:
            out["cell_seeds"] = self.cell_seeds
        if self.start_from is not None:
            out["start_from"] = self.start_from
        if self.battery:
            out["battery"] = self.battery
        if self.scope:
            out["scope"] = self.scope
        if self.hypotheses:
            out["hypotheses"] = list(self.hypotheses)
        return copy.deepcopy(out)

    @classmethod
    def from_record(cls, record) -> StudySettings:
        """The settings a record holds (study.json's 'settings', or `record()` with some
        values replaced), as they are: nothing is checked, so a record of an older study
        reads back whatever it holds; KeyError when one the grid needs is missing."""
        return cls(name=record.get("name", ""), output_dir=record.get("output_dir", ""),
                   models=record["models"], datasets=tuple(record["datasets"]),
                   variants=tuple(record["variants"]), artefacts=record["artefacts"],
                   seeds=tuple(record["seeds"]), line_search=record["line_search"],
                   bindings=tuple(record["bindings"]), source=record["source"],
                   model_variants=record.get("model_variants") or {},
                   cell_seeds=record.get("cell_seeds") or {},
                   start_from=record.get("start_from"), battery=record.get("battery"),
                   scope=record.get("scope") or "",
                   hypotheses=tuple(record.get("hypotheses") or ()))

    @classmethod
    def of(cls, settings) -> StudySettings:
        """`settings` itself when it is a StudySettings, else `from_record(settings)`."""
        return settings if isinstance(settings, cls) else cls.from_record(settings)


@gin.configurable("study")
def study_settings(name: str = gin.REQUIRED, output_dir: str = gin.REQUIRED,
                   models=gin.REQUIRED, datasets=("dsprites",), variants=("original",),
                   artefacts=None, seeds=(0,), line_search=None, bindings=(),
                   source: str = "auto", hypotheses=(), scope: str = "",
                   model_variants=None, battery=None, cell_seeds=None,
                   start_from: str | None = None) -> StudySettings:
    """The grid, checked (a StudySettings; 'absent from the settings' below: from its
    record, the settings study.json keeps).

    models: {model name: gin file}, '{dataset}' in the path replaced by the dataset name
      (e.g. 'papers/zietlow2021/beta_vae_{dataset}.gin').
    variants: 'original', 'noisy', 'modified', 'modified_texture' (the artefact's
      fixed-texture control), 'oracle', 'texture', 'wave', 'wave_texture' (the positive
      control, benchmark/data/oracle.py); artefacts: {dataset: {variant: artefact
      directory}} for the variants that load one ('modified' and 'modified_texture' must,
      the same directory; 'noisy' may, otherwise the default
      noise of paper 002 sec. 5.2 is used). A variant name may carry a strength,
      'modified@0.2', for robustness curves (data.eps).
    line_search: {model name: [gin parameter, [values...]]} (paper 002 Fig. 5); models
      without one train at their config's value.
    bindings: applied to every run (e.g. 'run.steps = 5000').
    hypotheses: pre-registered hypotheses, [{'id': 'H1', 'test': 'drop', 'model': ...}, ...]
      (benchmark/statistics/hypotheses.py); validated here and written into study.json before any
      run trains, tested and shown first by the report. Absent from the settings when
      empty, so studies without them keep their settings unchanged.
    scope: what the study can and cannot show at its scale, in a sentence or two; the
      report opens with it (absent from the settings when empty, like hypotheses).
    model_variants: {model name: [variants]}: a model trained on only some of the study's
      variants (e.g. the AE, the floor, on 'original' alone); other models train on all.
      Absent from the settings when empty.
    cell_seeds: {'model' or 'model/variant': [seeds]}: fewer seeds for a model or for one
      of its cells (e.g. a secondary control arm), a subset of `seeds`; the more specific
      key wins. Absent from the settings when empty.
    start_from: a study directory whose runs are this study's at fewer steps (e.g. a pool
      trained on to a longer length): each run with a namesake under its runs/ starts
      from that run's last checkpoint (run.start_from, benchmark/runs/run.py: a resume, with
      the same fingerprint as a run from scratch). Absent from the settings when None.
    battery: what the arms mean when the study is an audit's reference
      (benchmark/studies/audit.py), `check_battery`; absent from the settings when empty.
    """
    models = dict(models)
    if not models:
        raise ValueError("study.models is empty; expected {model name: gin file}")
    artefacts = {d: dict(v) for d, v in dict(artefacts or {}).items()}
    for variant in variants:
        base = base_of(variant)
        if base not in VARIANTS:
            raise ValueError(f"study.variants: unknown variant {variant!r}; expected one of "
                             f"{', '.join(VARIANTS)} (optionally '@<eps>')")
        if base in ARTEFACT_VARIANTS:
            missing = [d for d in datasets if not artefacts.get(d, {}).get(base)]
            if missing:
                raise ValueError(f"study.variants has {base!r} but study.artefacts names no "
                                 f"{base} artefact for {missing}")
    if not list(seeds):
        raise ValueError("study.seeds is empty; expected at least one seed (e.g. [0, 1, 2])")
    line_search = {m: (p, list(v)) for m, (p, v) in dict(line_search or {}).items()}
    unknown = [m for m in line_search if m not in models]
    if unknown:
        raise ValueError(f"study.line_search names models {unknown} that are not in "
                         f"study.models ({sorted(models)})")
    output_dir, datasets, variants = str(output_dir), tuple(datasets), tuple(variants)
    seeds, bindings = tuple(int(s) for s in seeds), tuple(bindings)
    model_variants = {m: list(v) for m, v in dict(model_variants or {}).items()}
    for model, subset in model_variants.items():
        if model not in models:
            raise ValueError(f"study.model_variants names model {model!r}, which is not in "
                             f"study.models ({sorted(models)})")
        odd = [v for v in subset if v not in variants]
        if odd or not subset:
            raise ValueError(f"study.model_variants[{model!r}]: expected a non-empty subset "
                             f"of study.variants ({list(variants)}), found {subset}")
    cell_seeds = {str(k): [int(s) for s in v] for k, v in dict(cell_seeds or {}).items()}
    for key, subset in cell_seeds.items():
        model, _, variant = key.partition("/")
        if model not in models or (variant and variant not in
                                   model_variants.get(model, variants)):
            raise ValueError(f"study.cell_seeds: expected keys 'model' or 'model/variant' of "
                             f"the grid (models {sorted(models)}, variants {list(variants)}), "
                             f"found {key!r}")
        odd = [seed for seed in subset if seed not in seeds]
        if odd or not subset:
            raise ValueError(f"study.cell_seeds[{key!r}]: expected a non-empty subset of "
                             f"study.seeds ({list(seeds)}), found {subset}")
    if start_from is not None:
        if not (isinstance(start_from, str) and os.path.isdir(os.path.join(start_from,
                                                                             "runs"))):
            raise ValueError(f"study.start_from: expected a study directory with runs/, "
                             f"found {start_from!r}")
        start_from = os.path.abspath(start_from)
    battery = check_battery(battery, variants) if battery else None
    registered = hypotheses_lib.normalise(hypotheses)
    hypotheses_lib.check_grid(registered, models, datasets, variants, model_variants)
    check_hypothesis_metrics(registered, battery)
    if not isinstance(scope, str):
        raise ValueError(f"study.scope must be a text, found {scope!r}")
    return StudySettings(name=name, output_dir=output_dir, models=models, datasets=datasets,
                         variants=variants, artefacts=artefacts, seeds=seeds,
                         line_search=line_search, bindings=bindings, source=source,
                         model_variants=model_variants, cell_seeds=cell_seeds,
                         start_from=start_from, battery=battery, scope=scope,
                         hypotheses=tuple(registered))


def check_hypothesis_metrics(registered: list[dict], battery: dict | None) -> None:
    """ValueError, before any run trains, for a hypothesis whose metric the report has no
    column for, or on 'misalignment' in a study whose battery names no plane (where the
    report measures no angle)."""
    columns = [column for column, _, _ in METRICS]
    for h in registered:
        if h["metric"] == "misalignment":
            if not (battery or {}).get("plane"):
                raise ValueError(f"study.hypotheses {h['id']}: 'misalignment' is measured in "
                                 "the plane the study's battery names; set study.battery "
                                 "with a 'plane' (two factor columns)")
        elif h["metric"] not in columns:
            raise ValueError(f"study.hypotheses {h['id']}: expected a metric among "
                             f"{', '.join(columns)} or misalignment, found {h['metric']!r}")


def check_battery(battery, variants) -> dict:
    """A study's battery, checked against its variants: {'manipulated': the variant whose
    effect an audit tests (e.g. 'wave@0.3'), 'controls': [variants that change the images
    without the manipulation's dependence on the factors], 'sweep': the base variant whose
    strengths form the dose-response (optional), 'plane': two factor columns in which the
    alignment angle is measured (optional, benchmark/metrics/alignment.py)}. Returns it
    normalised; ValueError naming what was expected and found."""
    if not isinstance(battery, dict):
        raise ValueError(f"study.battery: expected a dict, found {battery!r:.100}")
    unknown = set(battery) - {"manipulated", "controls", "sweep", "plane"}
    if unknown:
        raise ValueError(f"study.battery: unknown keys {sorted(unknown)}; expected "
                         "manipulated, controls, sweep, plane")
    manipulated, controls = battery.get("manipulated"), battery.get("controls", [])
    if not isinstance(controls, (list, tuple)) or not all(isinstance(c, str)
                                                          for c in controls):
        raise ValueError(f"study.battery['controls']: expected a list of variants, found "
                         f"{controls!r}")
    odd = [v for v in [manipulated, *controls] if v not in variants or v == "original"]
    if odd:
        raise ValueError(f"study.battery: expected 'manipulated' and 'controls' among the "
                         f"study's variants other than original ({list(variants)}), found "
                         f"{odd}")
    out = {"manipulated": manipulated, "controls": list(controls)}
    if battery.get("sweep") is not None:
        sweep = battery["sweep"]
        if not any(base_of(v) == sweep for v in variants):
            raise ValueError(f"study.battery['sweep']: expected the base name of a study "
                             f"variant, found {sweep!r}")
        out["sweep"] = sweep
    if battery.get("plane") is not None:
        plane = battery["plane"]
        if (not isinstance(plane, (list, tuple)) or len(plane) != 2
                or not all(isinstance(c, int) and c >= 0 for c in plane)
                or plane[0] == plane[1]):
            raise ValueError(f"study.battery['plane']: expected two factor columns "
                             f"(different ones), found "
                             f"{plane!r}")
        out["plane"] = list(plane)
    return out


def seeds_of(settings: StudySettings, model: str, variant: str) -> list[int]:
    """The seeds of one cell: study.cell_seeds' 'model/variant', else its 'model', else
    study.seeds."""
    chosen = settings.cell_seeds
    return chosen.get(f"{model}/{variant}", chosen.get(model, settings.seeds))


def expand(settings: StudySettings | dict) -> list[RunSpec]:
    """Every run of the grid, in a stable order, seed-major (all cells of the first seed,
    then of the second, ...). settings: a StudySettings, or a record of one (study.json's
    settings, `StudySettings.from_record`)."""
    settings = StudySettings.of(settings)
    specs = []
    for model, gin_file in settings.models.items():
        param, values = settings.line_search.get(model, (None, [None]))
        variants = settings.model_variants.get(model, settings.variants)
        for dataset in settings.datasets:
            for variant in variants:
                arm = ArmLabel.parse(variant)
                base = arm.base
                data = [f"data.name = '{dataset}'", f"data.variant = '{base}'",
                        f"data.source = '{settings.source}'"]
                artefact = settings.artefacts.get(dataset, {}).get(base)
                if artefact and base != "original":
                    data.append(f"data.artefact = '{os.path.abspath(artefact)}'")
                if arm.strength:
                    data.append(f"data.eps = {arm.eps}")
                for value in values:
                    hyper = [] if param is None else [f"{param} = {value!r}"]
                    tag = "" if param is None else f"_{param.split('.')[-1]}={value}"
                    for seed in seeds_of(settings, model, variant):
                        name = f"{model}_{dataset}_{arm.shown()}{tag}_seed{seed}"
                        source = os.path.join(settings.start_from or "", "runs", name)
                        start = ([f"run.start_from = '{source}'"]
                                 if settings.start_from and os.path.isdir(source) else [])
                        specs.append(RunSpec(
                            name, (gin_file.format(dataset=dataset),),
                            tuple([*settings.bindings, *data, *hyper, *start,
                                   f"run.seed = {seed}"])))
    names = [config.check_path_name(s.name, "a study run's name (study.models' keys, "
                                    "variants and line_search values)") for s in specs]
    if len(set(names)) != len(names):
        raise ValueError("study grid has duplicate run names; check study.models/variants")
    # Seed-major: an interrupted study has every cell's first seed before any second one.
    seed_rank = {f"run.seed = {seed}": rank for rank, seed in enumerate(settings.seeds)}
    return sorted(specs, key=lambda spec: seed_rank[spec.bindings[-1]])


@contextlib.contextmanager
def _run_pool(workers: int):
    """A pool of `workers` threads that start runner processes; on KeyboardInterrupt the
    runs not started are cancelled and the running processes stopped (`stop_runs`: each
    keeps its run's last checkpoint) before it propagates: Ctrl-C ends the study."""
    _STOPPING.clear()
    pool = concurrent.futures.ThreadPoolExecutor(max(1, int(workers)))
    try:
        yield pool
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        stopped = stop_runs()
        logging.warning("interrupted: %d running run(s) stopped at their last checkpoint, "
                        "the others not started", stopped)
        raise
    finally:
        pool.shutdown(wait=True)
        _STOPPING.clear()                 # no worker is left to start anything


def run_local(commands: dict, workers: int, record) -> None:
    """Runs {name: command} on `workers` threads, calling record(name, exit code, stderr
    tail, seconds the run took) as each ends; Ctrl-C as `_run_pool`."""
    with _run_pool(workers) as pool:
        futures = {pool.submit(_timed_run, cmd, os.getcwd()): name
                   for name, cmd in commands.items()}
        for future in concurrent.futures.as_completed(futures):
            record(futures[future], *future.result())


def run_local_batches(batches: list[list[dict]], workers: int, record) -> None:
    """Runs each batch of run specs in one worker process (`processes.run_batch`), on
    `workers` threads, calling record(name, exit code, stderr tail, seconds) in this
    thread as each run ends; Ctrl-C as `_run_pool`."""
    import queue

    results: queue.Queue = queue.Queue()
    with _run_pool(workers) as pool:
        for batch in batches:
            pool.submit(run_batch, batch, os.getcwd(), lambda *r: results.put(r))
        for _ in range(sum(len(b) for b in batches)):
            while True:                   # a timeout, so that Ctrl-C is seen at once
                try:
                    item = results.get(timeout=1.0)
                    break
                except queue.Empty:
                    continue
            record(*item)


def _timed_run(command: list[str], cwd: str) -> tuple[int, str, float]:
    started = time.time()
    code, stderr = run_one(command, cwd)
    return code, stderr, time.time() - started


def _read_json(path: pathlib.Path, kind: type, default):
    """A bookkeeping file's content, `default` when absent; a clear error when unreadable."""
    if not path.exists():
        return default
    try:
        content = json.loads(path.read_text())
    except ValueError as error:
        raise ValueError(f"{path}: expected the study's JSON bookkeeping, found unreadable "
                         f"content ({error}); move it away to start it afresh") from None
    if not isinstance(content, kind):
        raise ValueError(f"{path}: expected a JSON {kind.__name__}, found "
                         f"{type(content).__name__}")
    return content


def _read_failed(path: pathlib.Path) -> dict:
    return _read_json(path, dict, {})


#: the exit status of a run stopped by SIGINT (it kept its last checkpoint; benchmark.run)
INTERRUPTED_EXIT = 130


def was_stopped(code) -> bool:
    """Whether a run's exit code says it was stopped from outside rather than failed: killed
    by a signal (a negative code from subprocess; kill -9, the OOM killer) or stopped by
    SIGINT (130). Such a run is unfinished: its checkpoints are intact (written by rename),
    so the next study command resumes it."""
    return isinstance(code, int) and (code < 0 or code == INTERRUPTED_EXIT)


def _merge_study_json(path: pathlib.Path, settings: StudySettings, specs: list) -> None:
    """study.json: the current settings; every run listed before or now (a spec of this
    grid replaces its older entry); earlier, different settings under
    'previous_settings'."""
    old = _read_json(path, dict, {})
    runs = {r["name"]: r for r in old.get("runs", []) if isinstance(r, dict) and "name" in r}
    runs.update({s.name: dataclasses.asdict(s) for s in specs})
    current = json.loads(json.dumps(settings.record()))
    previous = list(old.get("previous_settings", []))
    if old.get("settings") is not None and old["settings"] != current:
        previous.append(old["settings"])
    payload = {"settings": current, "runs": list(runs.values())}
    if previous:
        payload["previous_settings"] = previous
    write_json(path, payload)


def identity_requests(specs: list) -> list[dict]:
    """The specs as `python -m benchmark.identities` reads them: [{name, gin_files,
    bindings}]."""
    return [{"name": s.name, "gin_files": list(s.gin_files), "bindings": list(s.bindings)}
            for s in specs]


def expected_identities(specs: list) -> dict:
    """{name: identity | {'error'}} of the specs, parsed as the runner will parse them (in
    a process of its own: `python -m benchmark.identities`)."""
    if not specs:
        return {}
    payload = json.dumps(identity_requests(specs))
    result = subprocess.run([sys.executable, "-m", "benchmark.identities"], input=payload,
                            preexec_fn=end_with_parent(),
                            capture_output=True, text=True, cwd=os.getcwd(),
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"computing the runs' configuration fingerprints failed (exit "
                           f"{result.returncode}):\n{result.stderr[-3000:]}")
    return json.loads(lines[-1])


def run_states(out: pathlib.Path, specs: list) -> tuple[set, dict, dict]:
    """(names of finished runs, {name: why it is another configuration}, {name: why it
    cannot be configured}) of the specs: finished = results.json and the fingerprint the
    spec asks for; another configuration = a run directory holding another fingerprint;
    unconfigurable = a spec the runner could not parse (a missing gin file, a misspelt
    binding, a missing artefact)."""
    held = {}
    changed = {}
    for s in specs:
        run_dir = out / "runs" / s.name
        try:
            ident = fingerprint_lib.recorded(run_dir) if run_dir.is_dir() else None
        except ValueError as error:
            changed[s.name] = str(error)
            continue
        if ident is not None:
            held[s.name] = ident
    expected = expected_identities(specs)
    unconfigurable = {s.name: expected[s.name]["error"] for s in specs
                      if "error" in expected.get(s.name, {})}
    done = set()
    for name, ident in held.items():
        wanted = expected.get(name, {})
        if "fingerprint" not in wanted:
            continue
        if ident["fingerprint"] != wanted["fingerprint"]:
            changed[name] = fingerprint_lib.mismatch_message(out / "runs" / name, ident,
                                                             wanted, "")
        elif results_lib.is_finished(out / "runs" / name, ident["fingerprint"]):
            done.add(name)
    return done, changed, unconfigurable


def progress_line(done: int, total: int, elapsed: float, run_seconds=(),
                  workers: int = 1, resumed_done: int = 0) -> str:
    """'3/10 runs done, 12 min elapsed, about 28 min left'. With `run_seconds` (how long
    each finished run took, start to end) the rest is their mean times the runs left over
    the `workers` that run them side by side; without, the study's elapsed time per
    finished run times the runs left, which reads W side-by-side runs as one while the
    first of them are still running (an ETA twice too long at 2 workers). Of the `done`
    runs, `resumed_done` resumed from a checkpoint and trained only their last steps: while
    they are all that ended, no estimate is given (it would read minutes for hours)."""
    left_runs = total - done
    if run_seconds:
        mean = sum(run_seconds) / len(run_seconds)
        left = mean * left_runs / max(1, min(int(workers), left_runs))
    elif done > resumed_done:
        left = elapsed / done * left_runs
    else:
        left = None
    eta = ("all done" if done >= total else "time left known when a fresh run ends"
           if left is None else f"about {left / 60:.0f} min left")
    return f"{done}/{total} runs done, {elapsed / 60:.0f} min elapsed, {eta}"


def progress_bar(total: int, stream=None):
    """A tqdm bar of finished runs on a terminal (stderr); disabled otherwise, where the
    log line per run (`progress_line`) is the progress."""
    stream = sys.stderr if stream is None else stream
    return tqdm(total=total, unit="run", desc="study", file=stream,
                disable=not (hasattr(stream, "isatty") and stream.isatty()))


def execute(settings: StudySettings, backend: str = "local", workers: int = 1,
            address: str | None = None, retry_failed: bool = False,
            dry_run: bool = False, runs_per_process: int = 1) -> dict:
    """Runs what is left of the grid; returns {'finished', 'ran', 'failed', 'skipped',
    'stopped', ...}. runs_per_process > 1 (local backend): that many runs per worker
    process (benchmark/runs/worker.py)."""
    out = pathlib.Path(settings.output_dir)
    specs = expand(settings)
    if dry_run:
        return _execute(out, settings, specs, backend, workers, address, retry_failed, True)
    with directory_lock(out, f"benchmark.study {settings.name}"):
        return _execute(out, settings, specs, backend, workers, address, retry_failed, False,
                        runs_per_process)


def _execute(out: pathlib.Path, settings: StudySettings, specs: list, backend: str, workers: int,
             address: str | None, retry_failed: bool, dry_run: bool,
             runs_per_process: int = 1) -> dict:
    failed_path = out / "failed.json"
    # runs recorded as failed because they were stopped (written before the suite told the
    # two apart) are unfinished, not failed: they resume like any other
    failed = {name: entry for name, entry in _read_failed(failed_path).items()
              if not (isinstance(entry, dict) and was_stopped(entry.get("exit_code")))}
    done, changed, unconfigurable = run_states(out, specs)
    if unconfigurable and not dry_run:
        first = sorted(unconfigurable)[0]
        reason = " / ".join(line.strip() for line in unconfigurable[first].splitlines()
                            if line.strip())
        raise ConfigError(
            f"study {settings.name}: run {first} cannot be configured, so no run was "
            f"started: {reason}"
            + (f" (and {len(unconfigurable) - 1} more runs of the grid)"
               if len(unconfigurable) > 1 else ""))
    if changed and not dry_run:
        raise fingerprint_lib.ConfigMismatch(
            f"study {settings.name}: these run directories in {out / 'runs'} hold "
            f"another configuration than the study now asks for ({len(changed)}; its "
            "settings or gin files changed):\n  " + "\n  ".join(changed[n] for n in sorted(changed))
            + "\nUse another study.output_dir for the new settings, or remove those run "
            "directories to retrain them.")
    # a run directory another live process writes (a runner left by an earlier invocation
    # of this study, say) is busy: neither started again nor counted as failed
    busy = {s.name: holder for s in specs if s.name not in done
            for holder in [is_locked(out / "runs" / s.name)] if holder}
    todo = [s for s in specs if s.name not in done and s.name not in changed
            and s.name not in busy and (retry_failed or s.name not in failed)]
    skipped = [s.name for s in specs if s.name not in done and s.name not in changed
               and s.name not in busy and s not in todo]
    logging.info("study %s: %d runs, %d finished, %d to run, %d failed before (skipped), "
                 "%d busy", settings.name, len(specs), len(done), len(todo),
                 len(skipped), len(busy))
    for name, holder in sorted(busy.items()):
        logging.warning("run %s is busy, not started: its directory is held by %s", name,
                        holder)
    if dry_run:
        for s in specs:
            state = ("finished" if s.name in done else "changed" if s.name in changed
                     else "bad config" if s.name in unconfigurable
                     else "busy" if s.name in busy else "failed" if s.name in failed
                     else "to run")
            print(f"{state:9s} {s.name}")
        if unconfigurable:
            first = sorted(unconfigurable)[0]
            reason = " / ".join(line.strip() for line in unconfigurable[first].splitlines()
                                if line.strip())
            print(f"bad config: {len(unconfigurable)} run(s) cannot be configured now; "
                  f"{first}: {reason[-400:]}")
        return {"finished": sorted(done), "ran": [], "failed": sorted(failed),
                "skipped": skipped, "changed": sorted(changed), "busy": sorted(busy),
                "unconfigurable": unconfigurable, "stopped": []}
    _merge_study_json(out / "study.json", settings, specs)
    record_alignment(out, settings)      # runs finished before this call (a resume)
    commands = {s.name: s.command(out.resolve()) for s in todo}
    ran, now_failed, stopped, ended = [], [], [], []
    started = time.time()
    bar = progress_bar(len(commands))

    run_seconds = []
    # a run that resumes trains only its last steps: its time would shorten the ETA
    resumed = {name for name in commands
               if (out / "runs" / name / "checkpoints" / "checkpoint").exists()}

    def record(name: str, code: int, stderr: str, seconds: float | None = None) -> None:
        current = _read_failed(failed_path)     # merged: entries of other runs are kept
        if code == 0:
            ran.append(name)
            if seconds is not None and name not in resumed:
                run_seconds.append(seconds)
            current.pop(name, None)
            record_alignment(out, settings)
        elif code == USER_ERROR_EXIT and LOCKED_MARK in stderr:
            busy[name] = stderr.strip().splitlines()[-1]   # taken since the check above
            logging.warning("run %s is busy: %s", name, busy[name])
        elif was_stopped(code):
            stopped.append(name)
            current.pop(name, None)
            logging.warning("run %s was stopped (exit %d%s), not failed: it is unfinished "
                            "and the next study command resumes it from its last "
                            "checkpoint", name, code,
                            f", signal {-code}" if code < 0 else "")
        else:
            now_failed.append(name)
            current[name] = {"exit_code": code, "stderr_tail": stderr,
                             "time": time.strftime("%Y-%m-%d %H:%M:%S")}
            logging.error("run %s failed (exit %d):\n%s", name, code, stderr[-1500:])
        write_json(failed_path, current)
        bar.update(1)
        ended.append(name)
        logging.info("%s %s; %s", name, "finished" if code == 0 else "busy"
                     if name in busy else "stopped" if name in stopped else "FAILED",
                     progress_line(len(ended), len(commands), time.time() - started,
                                   run_seconds, workers if backend == "local" else 1,
                                   sum(n in resumed for n in ended)))

    if backend == "ray" and commands:
        for name, code, stderr in _ray_map(commands, address):
            record(name, code, stderr)
    elif commands and runs_per_process > 1:
        ordered = [{"name": s.name, "gin_files": list(s.gin_files),
                    "bindings": list(s.bindings),
                    "output_dir": str(out.resolve() / "runs" / s.name)} for s in todo]
        size = max(1, min(int(runs_per_process), -(-len(ordered) // max(1, int(workers)))))
        run_local_batches([ordered[i:i + size] for i in range(0, len(ordered), size)],
                          workers, record)
    elif commands:
        run_local(commands, workers, record)
    bar.close()
    write_sample_grids(settings, out / "samples")
    return {"finished": sorted(done | set(ran)), "ran": sorted(ran),
            "failed": sorted(now_failed), "skipped": skipped, "changed": [],
            "busy": sorted(busy), "stopped": sorted(stopped)}


def record_alignment(out: pathlib.Path, settings: StudySettings) -> None:
    """For a study whose battery names a plane: OUT/alignment.json brought up to date after
    a run finishes (`alignment.update_study_alignment`), so that each run's angles are kept
    in a file a study publishes, while its evaluation codes (not kept in git) are still
    there. A file it cannot merge (another plane, unreadable) is left as it is, with a
    warning: the runs go on, and the alignment command says what to do."""
    plane = (settings.battery or {}).get("plane")
    if not plane:
        return
    try:
        alignment_lib.update_study_alignment(out, [int(c) for c in plane])
    except (MetricInputError, OSError, IndexError) as error:   # a side record: runs go on
        logging.warning("alignment.json not updated: %s", error)


def write_sample_grids(settings: StudySettings, directory: pathlib.Path) -> None:
    """A preview sheet per dataset x variant and, beside each but the original's, how much
    the variant changes the images (X.change.json; benchmark/data/change.py), for the
    report, unless already there; on the reduced dataset when the study's bindings fix
    factors, stride them or keep a range of them (data.fixed_factors, data.factor_strides,
    data.factor_ranges)."""
    reductions = {name: next((b.split("=", 1)[1].strip() for b in settings.bindings
                              if b.split("=", 1)[0].strip() == f"data.{name}"), None)
                  for name in ("fixed_factors", "factor_strides", "factor_ranges")}
    for dataset in settings.datasets:
        for variant in settings.variants:
            arm = ArmLabel.parse(variant)
            base = arm.base
            path = directory / f"{dataset}_{variant}.png"
            if path.exists() and (base == "original" or change_path(path).exists()):
                continue
            command = [sys.executable, "-m", "benchmark.data", "preview",
                       f"--dataset={dataset}", f"--variant={base}",
                       f"--source={settings.source}", f"--out={path}", "--verbosity=-1"]
            artefact = settings.artefacts.get(dataset, {}).get(base)
            if artefact and base != "original":
                command.append(f"--artefact={os.path.abspath(artefact)}")
            if arm.strength:
                command.append(f"--eps={arm.eps}")
            command += [f"--{name}={value}" for name, value in reductions.items() if value]
            code, stderr = run_one(command, os.getcwd())
            if code != 0:
                logging.warning("sample grid %s failed: %s", path, stderr[-500:])


RAY_LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def _ray_map(commands: dict, address: str | None):
    """Yields (name, exit code, stderr tail) of each command run as a Ray task.

    Without `address`: a new Ray instance on this machine whose every listener is on
    127.0.0.1 (checked by tests/benchmark_core/test_study_ray.py); with it: the cluster
    at `address`, bound however that cluster was started (the user's choice).
    """
    import ipaddress

    if not address:
        # Ray rewrites a loopback `_node_ip_address` to the machine's external address on
        # Linux (services.resolve_ip_for_localhost) unless this switch, read once when Ray
        # is imported, is off; with it off the node IP is 127.0.0.1 and gcs_server, raylet,
        # workers, the agents and this driver bind to loopback (Ray binds each server to
        # loopback when the node IP is loopback, else to all interfaces).
        os.environ[RAY_LOOPBACK_ENV] = "0"
    try:
        import ray
    except ImportError as error:
        raise RuntimeError("--backend=ray needs Ray: pip install '.[ray]'") from error
    if address:
        ray.init(address=address)
    else:
        refusal = (f"Ray was imported in this process before {RAY_LOOPBACK_ENV}=0 was set, "
                   "so a local instance would listen on every interface; set that variable "
                   "in the environment before Ray is imported, or pass --address to use a "
                   "cluster of your choosing")
        constants = getattr(getattr(ray, "_private", None), "ray_constants", None)
        if getattr(constants, "ENABLE_RAY_CLUSTER", False):
            raise RuntimeError(f"not starting Ray: {refusal}")
        ray.init(address="local", include_dashboard=False, dashboard_host="127.0.0.1",
                 _node_ip_address="127.0.0.1")
        node_ip = ray.util.get_node_ip_address()
        if not ipaddress.ip_address(node_ip).is_loopback:    # any Ray without that switch
            ray.shutdown()
            raise RuntimeError(f"the local Ray instance came up on {node_ip}, expected "
                               f"127.0.0.1 ({refusal}); it was shut down")
    try:
        remote = ray.remote(num_cpus=1)(run_in_worker)
        refs = {remote.remote(cmd, os.getcwd()): name for name, cmd in commands.items()}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            code, stderr = ray.get(ready[0])
            yield refs[ready[0]], code, stderr
    finally:
        ray.shutdown()


@cli_main
def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    with user_errors(ValueError, KeyError, IOError, RuntimeError,
                     prefix="invalid study configuration: "):
        config.parse_config(FLAGS.gin_file, FLAGS.gin_bindings)
        settings = study_settings()
    try:
        with user_errors(ValueError):      # ConfigMismatch; DirectoryLocked is a UserError
            summary = execute(settings, FLAGS.backend, FLAGS.workers, FLAGS.address,
                              FLAGS.retry_failed, FLAGS.dry_run, FLAGS.runs_per_process)
    except KeyboardInterrupt:
        print(f"interrupted: finished runs and each run's last checkpoint are kept in "
              f"{settings.output_dir}; rerun the same command to resume", file=sys.stderr)
        sys.exit(130)
    print(f"{len(summary['finished'])} finished, {len(summary['ran'])} ran now, "
          f"{len(summary['failed'])} failed, {len(summary['skipped'])} skipped as failed "
          f"before, {len(summary['busy'])} busy (written by another process)"
          + (f", {len(summary['stopped'])} stopped (rerun to resume)"
             if summary["stopped"] else "") + f": {settings.output_dir}")
    if FLAGS.dry_run:
        return
    if summary["failed"] or summary["skipped"] or summary["stopped"]:
        print(f"not every run finished: the study exits 1 while runs are left failed "
              f"({len(summary['failed']) + len(summary['skipped'])}; their errors in "
              f"{settings.output_dir}/failed.json, --retry_failed runs them again) or "
              f"stopped ({len(summary['stopped'])}; the same command resumes them)",
              file=sys.stderr)
        sys.exit(1)

