"""python -m perturbations.generate --gin_file=gin_configs/perturbations/dsprites.gin
[--gin_bindings=...] [--export=FILE] [--overwrite] [--resume] [--dry_run]

Makes the adversarially modified variant of a dataset (paper 002 sec. 4):
1. reference beta-VAEs: restarts trained with the runner (or finished run directories
   reused), ranked by MIG; entangled = min MIG, disentangled = max MIG (k + k ensembles);
   a chosen run without its checkpoints (a study pool in a clone: git keeps none) is
   retrained from its recorded config and seed and used only if it repeats its MIG;
2. the manipulation game of perturbations/manipulation.py, trained by the suite's training
   loop (checkpoints, resume after any kill, TensorBoard, progress, NaN stop);
3. the artefact (m(w) weights + metadata.json, and the references it was made from with
   their SHA-256 under references/, so the game and its re-adaptation rerun from a clean
   clone: perturbations/references.py) in `generation.output_dir`, which
   `data.variant = 'modified'; data.artefact = DIR` loads as a dataset variant, one more
   artefact per strength of `generation.eps_sweep`, and `--export` in the official format;
4. evidence in the artefact directory: figure.png (original, manipulation, modified; paper
   002 Fig. 4, beside the key diagnostics), evidence.json (pixel statistics, references' MIG
   on original vs modified, and the diagnostics of perturbations/diagnostics.py: how much
   m varies with w). An artefact below the minimum effect (m nearly the same pattern for
   every image, or |x' - x| under a grey level) is logged as a warning and recorded as
   "below_minimum_effect": true. Every eps_sweep artefact gets its own evidence.json and
   figure.png.
When every output is written, work_dir/generated.json records it: `--resume` (the
paper-scale pipeline's, benchmark/studies/pipeline.py) then exits at once, and otherwise trains on
from the last checkpoint and writes the outputs, replacing only artefacts its own game
made. `--dry_run` prints the plan (game, references and where they come from, outputs).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shutil

import gin
import keras
import numpy as np
from absl import app, flags, logging

from benchmark import metrics as metrics_lib
from benchmark.core import config
from benchmark.core.atomic import write_json
from benchmark.core.errors import UserError, cli_main, run_command, user_errors
from benchmark.core.lock import directory_lock
from benchmark.data import export, get_dataset, pipeline
from benchmark.data.preview import tile_rows
from benchmark.data.subset import FactorSubset
from benchmark.data.variants import DEFAULT_EPS
from benchmark.metrics import codes as codes_lib
from benchmark.runs import train as train_lib
from models.configurables import configured_optimizer
from models.optimizers import game_decoder_adam, manipulation_adam
from perturbations import artefact, diagnostics, manipulation, references

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command, so that
    importing this module next to another command's flags never clashes)."""
    config.define_gin_flags("generation.steps = 100")
    flags.DEFINE_string("export", None, "Also write the modified dataset in the official file "
                        "format to this path (.npz for dSprites, .h5 for Shapes3D).")
    flags.DEFINE_boolean("overwrite", False, "Replace artefacts already in generation."
                         "output_dir (and its eps-sweep directories); without it generation "
                         "refuses before any training.")
    flags.DEFINE_boolean("resume", False, "Finish this generation where it stopped: exit "
                         "at once when it already finished with these settings, else train "
                         "on and write its outputs, replacing only artefacts its own game "
                         "(generation.work_dir) made (benchmark.pipeline passes it).")
    flags.DEFINE_boolean("dry_run", False, "Print the plan (references, pool, game, outputs) "
                         "and train nothing.")


def output_dirs(settings: GenerateSettings) -> list[pathlib.Path]:
    """The artefact directories this generation writes: output_dir and its eps sweep."""
    out = pathlib.Path(settings.output_dir)
    return [out] + [out.parent / f"{out.name}_eps{eps:g}" for eps in settings.eps_sweep]


def occupied_outputs(settings: GenerateSettings) -> list[pathlib.Path]:
    """The artefact directories this generation would write (output_dir and its eps
    sweep) that already hold files: published artefacts others load must not be replaced
    by accident."""
    return [d for d in output_dirs(settings) if d.is_dir() and any(d.iterdir())]


#: written into work_dir when a generation has written all its outputs
FINISHED = "generated.json"
#: where an artefact publishes the references it was generated from
REFERENCES = references.IN_ARTEFACT


def finished_record(settings: GenerateSettings) -> dict:
    """What work_dir/generated.json records of a generation that wrote all its outputs:
    the settings that decide them beyond the game's (GAME_KEYS)."""
    return {"steps": settings.steps, "eps_sweep": list(settings.eps_sweep),
            "outputs": [str(d) for d in output_dirs(settings)]}


def already_generated(settings: GenerateSettings) -> bool:
    """Whether this generation finished before with these settings: its work_dir's record
    matches (`finished_record`; the game's own settings are checked separately by
    `check_game_settings`) and every output still holds its metadata.json."""
    path = pathlib.Path(settings.work_dir) / FINISHED
    if not path.is_file():
        return False
    found = artefact.read_json_object(path, UserError)
    return (found == json.loads(json.dumps(finished_record(settings)))
            and all((d / "metadata.json").is_file() for d in output_dirs(settings)))


def _plain(value):
    """A setting's value as the records keep it: tuples as lists (JSON)."""
    return list(value) if isinstance(value, tuple) else value


@dataclasses.dataclass(frozen=True)
class GenerateSettings:
    """A generation's checked settings (`generation_settings` builds them from the gin
    `generation.*` bindings; its docstring says more of each). `record()` is every
    setting as a plain dict, `game_record()` the part work_dir/game_settings.json keeps
    (and the artefact's metadata.json under training.game_settings)."""
    dataset: str
    """The dataset the game manipulates ('dsprites', 'shapes3d')."""
    source: str
    """Where its images come from (data.source: 'auto', 'file', 'procedural')."""
    eps: float
    """The manipulation strength, in (0, 1] (default: the dataset's, 0.1 dSprites, 0.175
    Shapes3D)."""
    reference_gin_files: tuple
    """Gin files of the reference restarts trained into work_dir/references/seed<S>."""
    reference_bindings: tuple
    """Gin bindings of those restarts (besides the dataset's)."""
    reference_seeds: tuple
    """Seeds (ints) of the restarts to train; (): none, only reference_runs and the
    reference_study's pool."""
    reference_runs: tuple
    """Finished run directories used as references as well."""
    reference_study: str | None
    """A study directory whose finished runs of reference_model on original `dataset`
    join the references; None: none."""
    reference_model: str
    """The model of reference_study's runs that are references ('beta_vae')."""
    reference_exclude_overpruned: bool
    """Choose the references among runs that are not over-pruned only."""
    reference_min_mig_gap: float | None
    """The MIG contrast the chosen references must have, in [0, 1]; None: any."""
    reference_thresholds: dict
    """Levels each chosen reference must meet on its side ({key of
    references.THRESHOLDS: value in [0, 1]}); {}: none."""
    reference_artefacts: tuple
    """Artefact directories whose published references stand for chosen runs that kept
    no checkpoints."""
    ensemble_size: int
    """k >= 1: k entangled + k disentangled references (1 dSprites, 4 Shapes3D)."""
    steps: int
    """Updates of m (>= 1); each also makes 3 decoder updates."""
    batch_size: int
    """Images per update (>= 1)."""
    latent_samples: int
    """Latent samples per image in the decoder losses (>= 1; 5, appendix B.1)."""
    seed: int
    """The game's seed: m's initial weights, its batches, the evidence's samples."""
    work_dir: str
    """Where the references, the game's checkpoints and its records are written."""
    output_dir: str
    """The artefact directory (the eps sweep's are <output_dir>_eps<E> beside it)."""
    eps_sweep: tuple
    """Further strengths, each in (0, 1], written as artefacts of the same m(w)."""
    checkpoint_every: int
    """Updates between the game's checkpoints."""
    log_every: int
    """Updates between its logged losses."""
    evidence_points: int
    """Samples of the MIG evaluation on original vs modified data."""
    reconstruction: str
    """The game's reconstruction loss (manipulation.RECONSTRUCTIONS: 'squared_error',
    'bernoulli')."""
    mean_penalty: float
    """The game's batch-mean penalty on m (>= 0)."""
    output_init_scale: float
    """m's last layer starts scaled by this, in (0, 1]."""
    neuron_learning_rate_scale: float
    """The one neuron's learning rate as a multiple (> 0) of m's; 1: one optimiser."""
    gate_steps: int
    """Decoder updates of each arm of the re-adaptation gate (>= 0; 0: no gate)."""
    fixed_factors: dict
    """{factor name: class}: the dataset reduced to the other factors; {}: the whole
    dataset."""
    unit_variance_init: bool
    """Rescale m's initial weights to unit pre-activation variance (False: Glorot)."""
    neuron_direction: str | tuple | None
    """The one neuron's initial direction: 'diagonal', one finite number per factor (not
    all 0), or None (the random draw of `seed`)."""

    def record(self) -> dict:
        """{setting: value}, tuples as lists (JSON)."""
        return {k: _plain(v) for k, v in dataclasses.asdict(self).items()}

    def game_record(self) -> dict:
        """The settings that decide what the game trains, as game_settings.json keeps them
        beside the optimisers: GAME_KEYS, and CHOICE_KEYS only where set otherwise than
        their defaults (so games recorded before they existed resume unchanged)."""
        return {**{k: _plain(getattr(self, k)) for k in GAME_KEYS},
                **{k: _plain(getattr(self, k)) for k, default in CHOICE_KEYS.items()
                   if getattr(self, k) != default}}


@gin.configurable("generation")
def generation_settings(dataset: str = "dsprites", source: str = "auto",
                        eps: float | None = None,
                        reference_gin_files=("papers/zietlow2021/beta_vae_dsprites.gin",),
                        reference_bindings=(), reference_seeds=(0, 1, 2, 3),
                        reference_runs=(), ensemble_size: int = 1, steps: int = 5000,
                        batch_size: int = 64, latent_samples: int = 5, seed: int = 0,
                        work_dir: str = "runs/perturbations/dsprites",
                        output_dir: str = "results/perturbations/dsprites_modified",
                        eps_sweep=(), checkpoint_every: int = 200, log_every: int = 50,
                        evidence_points: int = 10000, reconstruction: str = "squared_error",
                        mean_penalty: float = 0.0, output_init_scale: float = 0.1,
                        neuron_learning_rate_scale: float = 1.0, gate_steps: int = 1000,
                        fixed_factors: dict | None = None,
                        unit_variance_init: bool = False, neuron_direction=None,
                        reference_study: str | None = None,
                        reference_model: str = "beta_vae",
                        reference_exclude_overpruned: bool = False,
                        reference_min_mig_gap: float | None = None,
                        reference_thresholds=None,
                        reference_artefacts=()) -> GenerateSettings:
    """Settings of one generation (defaults: paper 002 sec. 4-5 and appendix B.1).

    eps: manipulation strength (None: 0.1 dSprites, 0.175 Shapes3D, sec. 5.2).
    reference_seeds: restarts trained by the runner into work_dir/references/seed<S>, with
      reference_gin_files + reference_bindings; reference_runs: finished run directories
      used as well (give reference_seeds=() to use only those); reference_study: a study
      directory (benchmark/studies/study.py) whose finished runs of `reference_model` on original
      `dataset` join them (a restart pool trained as a study, on a Ray cluster say: the
      paper-scale pipeline, gin_configs/pipelines/zietlow2021_paper.gin);
      reference_exclude_overpruned, reference_min_mig_gap, reference_thresholds: the
      choice's rules (references.choose; off by default, as in the paper, which states
      none).
    reference_artefacts: artefact directories whose published references (references/,
      with their SHA-256) stand for chosen runs that kept no checkpoints, when they repeat
      the run's MIG (references.weights_source); a chosen run found in none is retrained.
      So a second game on the references of a published one starts without retraining.
    ensemble_size: k entangled + k disentangled references (1 dSprites, 4 Shapes3D).
    steps: updates of m; each also makes 3 decoder updates; batch_size images per update.
    latent_samples: latent samples per image in the decoder losses (5, appendix B.1).
    eps_sweep: further strengths written as artefacts <output_dir>_eps<E> (same m(w)).
    evidence_points: samples of the MIG evaluation on original vs modified data.
    reconstruction, mean_penalty: the game's loss ('squared_error', paper 002 eqs. 4-5;
      'bernoulli' made the artefacts published before the loss was a choice) and its
      batch-mean penalty on m; output_init_scale: m's last layer starts scaled by it
      (perturbations/manipulation.py says why each matters).
    neuron_learning_rate_scale: the one neuron's weights (m's direction in factor space)
      learn at this multiple of m's learning rate, with an Adam of their own (1: the
      paper's single optimiser; manipulation.ManipulationGame says why it matters).
    gate_steps: decoder updates of each arm of the re-adaptation gate run on the artefact
      (perturbations/readapt.py: original / modified / texture, decoders restarted from the
      references, m frozen); published in evidence.json and readaptation.png, a failed
      gate logged as a warning and recorded as "readaptation_gate_passed": false. 0: skip.
    fixed_factors: {factor name: class}: the game, its references and the artefact on the
      dataset reduced to the other factors (benchmark/data/subset.py; e.g. the oracle
      study's ellipse, posX x posY); references reused from `reference_runs` must have
      been trained on the same reduction. None: the whole dataset.
    unit_variance_init: rescale m's initial weights so each layer's pre-activation has
      unit variance over the data's factors (False: dlib's Glorot initialisation, as the
      paper; perturbations/manipulation.py says why the default init can kill m).
    neuron_direction: the initial direction of the one neuron's input weights, m's
      direction in factor space ('diagonal', k numbers, or None: dlib's random draw of
      `seed`), norm kept (manipulation.set_neuron_direction); with two factors its angle
      is logged every step (`scalar_direction_deg`), so whether it learns a mixing
      direction or stays where it started is seen.
    Whatever the init, the game stops with an error when m dies (a hidden layer of its
    decoder dead for 10 consecutive updates).
    """
    if reconstruction not in manipulation.RECONSTRUCTIONS:
        raise ValueError(f"generation.reconstruction must be one of "
                         f"{', '.join(map(repr, manipulation.RECONSTRUCTIONS))}, found "
                         f"{reconstruction!r}")
    if not float(mean_penalty) >= 0.0:
        raise ValueError(f"generation.mean_penalty must be >= 0, found {mean_penalty}")
    if not float(neuron_learning_rate_scale) > 0.0:
        raise ValueError(f"generation.neuron_learning_rate_scale must be > 0, found "
                         f"{neuron_learning_rate_scale}")
    if not 0.0 < float(output_init_scale) <= 1.0:
        raise ValueError(f"generation.output_init_scale must be in (0, 1], found "
                         f"{output_init_scale}")
    if neuron_direction is not None and not (
            neuron_direction == "diagonal" or (
                isinstance(neuron_direction, (list, tuple)) and neuron_direction
                and all(isinstance(v, (int, float)) and np.isfinite(v) for v in neuron_direction)
                and any(neuron_direction))):
        raise ValueError(f"generation.neuron_direction must be None, 'diagonal' or one finite "
                         f"number per factor, not all 0, found {neuron_direction!r}")
    if reference_min_mig_gap is not None and not (
            isinstance(reference_min_mig_gap, (int, float))
            and 0 <= float(reference_min_mig_gap) <= 1):
        raise ValueError(f"generation.reference_min_mig_gap must be None or a number in "
                         f"[0, 1], found {reference_min_mig_gap!r}")
    if not (isinstance(reference_artefacts, (list, tuple))
            and all(isinstance(a, str) and a for a in reference_artefacts)):
        raise ValueError(f"generation.reference_artefacts must be a list of artefact "
                         f"directories, found {reference_artefacts!r}")
    if eps is None:
        if dataset not in DEFAULT_EPS:
            raise ValueError(f"no default eps for dataset {dataset!r}; set generation.eps")
        eps = DEFAULT_EPS[dataset]
    if int(gate_steps) < 0:
        raise ValueError(f"generation.gate_steps must be >= 0, found {gate_steps}")
    for name, value in (("steps", steps), ("batch_size", batch_size),
                        ("ensemble_size", ensemble_size), ("latent_samples", latent_samples)):
        if int(value) < 1:
            raise ValueError(f"generation.{name} must be >= 1, found {value}")
    for value in (eps, *eps_sweep):
        if not 0.0 < float(value) <= 1.0:
            raise ValueError(f"generation eps values must be in (0, 1], found {value}")
    return GenerateSettings(
        dataset=dataset, source=source, eps=float(eps),
        reference_gin_files=tuple(reference_gin_files),
        reference_bindings=tuple(reference_bindings),
        reference_seeds=tuple(int(s) for s in reference_seeds),
        reference_runs=tuple(str(r) for r in reference_runs),
        reference_study=None if reference_study is None else str(reference_study),
        reference_model=str(reference_model),
        reference_exclude_overpruned=bool(reference_exclude_overpruned),
        reference_min_mig_gap=(None if reference_min_mig_gap is None
                               else float(reference_min_mig_gap)),
        reference_thresholds=references.check_thresholds(reference_thresholds or {}),
        reference_artefacts=tuple(str(a) for a in reference_artefacts),
        ensemble_size=int(ensemble_size), steps=int(steps), batch_size=int(batch_size),
        latent_samples=int(latent_samples), seed=int(seed), work_dir=str(work_dir),
        output_dir=str(output_dir), eps_sweep=tuple(float(e) for e in eps_sweep),
        checkpoint_every=int(checkpoint_every), log_every=int(log_every),
        evidence_points=int(evidence_points), reconstruction=str(reconstruction),
        mean_penalty=float(mean_penalty), output_init_scale=float(output_init_scale),
        neuron_learning_rate_scale=float(neuron_learning_rate_scale),
        gate_steps=int(gate_steps),
        fixed_factors=dict(fixed_factors or {}),
        unit_variance_init=bool(unit_variance_init),
        neuron_direction=(neuron_direction if neuron_direction is None
                          or isinstance(neuron_direction, str)
                          else tuple(float(v) for v in neuron_direction)))


def generation_data(settings: GenerateSettings):
    """The dataset of a generation: `dataset` from `source`, reduced to `fixed_factors`
    when some are given (ValueError naming the factor when one is not the dataset's)."""
    data = get_dataset(settings.dataset, settings.source)
    if settings.fixed_factors:
        data = FactorSubset(data, settings.fixed_factors)
    direction = settings.neuron_direction
    if isinstance(direction, tuple) and len(direction) != data.num_factors:
        raise ValueError(f"generation.neuron_direction: expected {data.num_factors} numbers "
                         f"(one per factor of {data.name}: {', '.join(data.factor_names)}), "
                         f"found {len(direction)}")
    return data


#: factor vectors `unit_variance_init` measures the layers' spread on
INIT_FACTORS = 1024


def initial_manipulation(data, settings: GenerateSettings):
    """m(w) at its initial weights, a function of `settings.seed` only (Keras draws
    initial weights from the global seed, so an unseeded build differs run to run), with
    `unit_variance_init` rescaled on INIT_FACTORS factor vectors drawn with that seed."""
    keras.utils.set_random_seed(settings.seed)
    network = manipulation.manipulation_network(data.num_factors, data.observation_shape,
                                                settings.output_init_scale)
    if settings.neuron_direction is not None:
        weights = manipulation.set_neuron_direction(network, settings.neuron_direction)
        logging.info("neuron_direction %s: initial weights %s",
                     _plain(settings.neuron_direction),
                     ", ".join(f"{w:.3g}" for w in weights))
    if settings.unit_variance_init:
        factors = data.sample_factors(INIT_FACTORS, np.random.default_rng(settings.seed))
        scales = manipulation.unit_variance_init(
            network, pipeline.scaled_factors(factors, data.factor_sizes))
        logging.info("unit_variance_init: layers divided by %s",
                     ", ".join(f"{s:.3g}" for s in scales))
    return network


def neuron_kernel(network) -> list[float] | None:
    """The single neuron's input weights a (one per factor), None without that layer."""
    try:
        kernel = network.get_layer("single_neuron").get_weights()[0]
    except ValueError:
        return None
    return [float(v) for v in np.asarray(kernel)[:, 0]]


def neuron_record(initial: list[float] | None, final: list[float] | None) -> dict:
    """{'neuron_initial_weights', 'neuron_final_weights', 'neuron_turn_deg': the angle in
    degrees between the two weight vectors in factor space} for the artefact's metadata
    ({} without a neuron): with three or more factors no single plane angle is logged, so
    this says how far the game moved the direction through which m sees w."""
    if initial is None or final is None:
        return {}
    a, b = np.asarray(initial, float), np.asarray(final, float)
    cosine = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
    return {"neuron_initial_weights": initial, "neuron_final_weights": final,
            "neuron_turn_deg": float(np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0))))}


def scaled_optimizer(optimizer, scale: float):
    """A new optimiser like `optimizer` (same class and settings) whose learning rate is
    `scale` times its own; None when scale is 1 (the paper: one optimiser for all of m)."""
    if float(scale) == 1.0:
        return None
    optimizer_config = optimizer.get_config()
    rate = optimizer_config.get("learning_rate")
    if not isinstance(rate, (int, float)):
        raise ValueError("generation.neuron_learning_rate_scale needs m's optimiser to have "
                         f"a constant learning rate, found {rate!r}")
    return type(optimizer).from_config({**optimizer_config,
                                        "name": f"{optimizer_config['name']}_neuron",
                                        "learning_rate": rate * scale})


#: the settings that decide what the game trains (not `steps`: a finished game can be
#: trained on to more updates)
GAME_KEYS = ("dataset", "source", "fixed_factors", "eps", "reference_gin_files",
             "reference_bindings", "reference_seeds", "reference_runs", "ensemble_size",
             "batch_size", "latent_samples", "seed", "reconstruction", "mean_penalty",
             "output_init_scale", "neuron_learning_rate_scale", "unit_variance_init",
             "neuron_direction")


#: settings added to the game after games were recorded, with their defaults: recorded
#: only when set otherwise, so games recorded before they existed resume unchanged
CHOICE_KEYS = {"reference_study": None, "reference_model": "beta_vae",
               "reference_exclude_overpruned": False, "reference_min_mig_gap": None,
               "reference_thresholds": {}}


def check_game_settings(work_dir, settings: GenerateSettings, optimizers) -> dict:
    """The game's settings (GAME_KEYS and the optimisers' configs), checked against
    work_dir/game_settings.json when a game was started there before: other settings are a
    UserError naming each difference, so a resumed checkpoint never continues a game of
    another configuration. Nothing is written here (`record_game_settings` does, when the
    game starts), so a generation that fails before its game leaves no record behind."""
    work_dir = pathlib.Path(work_dir)
    wanted = {**settings.game_record(),
              "optimizers": [{k: v for k, v in o.get_config().items() if k != "name"}
                             for o in optimizers]}
    wanted = json.loads(json.dumps(wanted))         # as it reads back: tuples -> lists
    record = work_dir / "game_settings.json"
    if not record.exists():
        return wanted
    found = artefact.read_json_object(record, UserError)
    differ = sorted(k for k in set(wanted) | set(found) if wanted.get(k) != found.get(k))
    if differ:
        raise UserError(
            f"{work_dir} holds a game trained with other settings ("
            + "; ".join(f"{k}: recorded {found.get(k)!r}, now {wanted.get(k)!r}"
                        for k in differ)
            + "); set generation.work_dir to a new directory, or remove that one to "
            "start over")
    return wanted


def record_game_settings(work_dir, wanted: dict) -> None:
    """Writes work_dir/game_settings.json (`check_game_settings`' settings) when the game
    starts, unless it is there (a resumed game; a work_dir with checkpoints made before the
    record existed gets one now)."""
    record = pathlib.Path(work_dir) / "game_settings.json"
    if not record.exists():
        write_json(record, wanted)


def registered_pool_size(study_dir, model: str, dataset: str) -> int:
    """How many runs of `model` on original `dataset` the study's study.json registers
    (its seeds for that cell: cell_seeds' 'model/original', else 'model', else seeds; times
    the model's line-search values), so that a pool still training is not taken for the
    whole pool; 0 without a study.json or where it registers none."""
    path = pathlib.Path(study_dir) / "study.json"
    if not path.is_file():
        return 0
    settings = artefact.read_json_object(path, references.ReferenceError).get("settings")
    if (not isinstance(settings, dict) or model not in (settings.get("models") or {})
            or dataset not in (settings.get("datasets") or [])):
        return 0
    if "original" not in (settings.get("model_variants") or {}).get(
            model, settings.get("variants") or []):
        return 0
    cells = settings.get("cell_seeds") or {}
    seeds = cells.get(f"{model}/original", cells.get(model, settings.get("seeds") or []))
    searched = (settings.get("line_search") or {}).get(model)
    values = searched[1] if isinstance(searched, (list, tuple)) and len(searched) == 2 else [0]
    return len(seeds) * max(len(values), 1)


def pool_runs(study_dir, model: str, dataset: str) -> tuple[list[str], int]:
    """(the finished runs of `model` on original `dataset` in a study directory, sorted;
    how many runs of that model on that dataset there are, finished or not: its run
    directories, or the runs its study.json registers when more), read from each run's
    results.json."""
    runs_dir = pathlib.Path(study_dir) / "runs"
    if not runs_dir.is_dir():
        raise references.ReferenceError(f"generation.reference_study: expected a study "
                                         f"directory with runs/, found none at {study_dir}")
    prefix = f"{model}_{dataset}_original_"
    candidates = sorted(d for d in runs_dir.iterdir() if d.is_dir()
                        and d.name.startswith(prefix))
    finished = []
    for run_dir in candidates:
        path = run_dir / "results.json"
        if not path.is_file():
            continue
        results = artefact.read_json_object(path, references.ReferenceError)
        described = results.get("dataset")
        if results.get("model") == model and isinstance(described, dict) \
                and described.get("name") == dataset \
                and described.get("variant", "original") == "original":
            finished.append(str(run_dir))
    return finished, max(len(candidates), registered_pool_size(study_dir, model, dataset))


def gather_references(settings: GenerateSettings) -> list[dict]:
    """Trains the missing restarts (runner; finished ones are skipped) and reads them all
    with the finished runs of the reference study's pool."""
    runs = list(settings.reference_runs)
    if settings.reference_study:
        pooled, listed = pool_runs(settings.reference_study, settings.reference_model,
                                   settings.dataset)
        if len(pooled) < listed:
            raise references.ReferenceError(
                f"reference pool {settings.reference_study}: {listed - len(pooled)} of its "
                f"{listed} {settings.reference_model} runs on original "
                f"{settings.dataset} are not finished; finish the study first (rerun its "
                "command) so that the references are chosen from the whole pool")
        runs += pooled
    bindings = [*settings.reference_bindings, f"data.name = '{settings.dataset}'",
                f"data.source = '{settings.source}'"]
    if settings.fixed_factors:
        bindings.append(f"data.fixed_factors = {settings.fixed_factors!r}")
    for seed in settings.reference_seeds:
        run_dir = pathlib.Path(settings.work_dir) / "references" / f"seed{seed}"
        logging.info("reference restart seed %d -> %s", seed, run_dir)
        runs.append(str(references.train_reference(settings.reference_gin_files, bindings,
                                                   seed, run_dir)))
    found = [references.read_reference(r) for r in runs]
    for ref in found:
        described = ref["dataset"] if isinstance(ref["dataset"], dict) else {}
        if (described.get("name") != settings.dataset
                or described.get("variant", "original") != "original"
                or dict(described.get("fixed_factors") or {}) != settings.fixed_factors):
            raise references.ReferenceError(
                f"reference {ref['run_dir']}: expected a run on original "
                f"{settings.dataset} with fixed factors "
                f"{settings.fixed_factors or 'none'}, found {ref['dataset']}")
    return found


def plan(settings: GenerateSettings) -> str:
    """What a generation would do, from what is on disk now: its game, where its references
    come from (finished or to train) and which of them would be chosen when all are
    finished, and its outputs."""
    out = pathlib.Path(settings.output_dir)
    k = settings.ensemble_size
    lines = [f"generation of modified {settings.dataset}"
             + (f" (fixed factors {settings.fixed_factors})" if settings.fixed_factors
                else "")
             + f": eps {settings.eps:g}"
             + (f" (and {', '.join(f'{e:g}' for e in settings.eps_sweep)})"
                if settings.eps_sweep else "")
             + f", {settings.steps} updates of m at batch {settings.batch_size}, "
             f"references {k} entangled + {k} disentangled"]
    runs = list(settings.reference_runs)
    if settings.reference_study:
        try:
            pooled, listed = pool_runs(settings.reference_study,
                                       settings.reference_model, settings.dataset)
            lines.append(f"  pool {settings.reference_study}: {len(pooled)} of {listed} "
                         f"{settings.reference_model} runs on original "
                         f"{settings.dataset} finished")
            runs += pooled
        except references.ReferenceError:
            lines.append(f"  pool {settings.reference_study}: not trained yet (its "
                         "study stage makes it)")
    to_train = []
    for seed in settings.reference_seeds:
        run_dir = pathlib.Path(settings.work_dir) / "references" / f"seed{seed}"
        if (run_dir / "results.json").is_file():
            runs.append(str(run_dir))
        else:
            to_train.append(seed)
    if to_train:
        lines.append(f"  restarts to train first in {settings.work_dir}/references: seeds "
                     f"{to_train}")
    found = []
    for run in runs:
        try:
            found.append(references.read_reference(run))
        except references.ReferenceError as error:
            lines.append(f"  unusable reference: {error}")
    if len(found) >= 2 * k and not to_train:
        try:
            entangled, disentangled = references.choose(
                found, k, settings.reference_exclude_overpruned,
                settings.reference_min_mig_gap, settings.reference_thresholds)
        except references.ReferenceError as error:
            lines.append(f"  no references can be chosen: {error}")
            entangled = disentangled = []
        for side, chosen in (("entangled", entangled), ("disentangled", disentangled)):
            lines.append(f"  {side}: " + ", ".join(
                f"{r['run_dir']} (MIG {r['mig']:.3f}"
                + weights_plan(r["run_dir"], settings) + ")" for r in chosen))
    else:
        lines.append(f"  references: {len(found)} finished so far; {2 * k} are needed")
    occupied = occupied_outputs(settings)
    lines.append(f"  output: {out}" + (" (holds an artefact: needs --overwrite)"
                                       if out in occupied else ""))
    return "\n".join(lines)


def weights_plan(run_dir: str, settings: GenerateSettings) -> str:
    """How the dry run says a chosen reference's weights will be found (`reference_weights`
    decides; '' when the run has them)."""
    if references.has_weights(run_dir):
        return ""
    try:
        copy = references.copy_in_artefacts(run_dir, settings.reference_artefacts)
    except references.ReferenceError as error:
        return f"; {error}"
    if copy is not None:
        return f"; no checkpoints: its published copy {copy}, if it repeats that MIG"
    return ("; no checkpoints: retrained first from its gin config and seed, used only if "
            "it repeats that MIG")


def figure_sheet(data, network, eps: float, rng: np.random.Generator, rows: int = 6):
    """Paper 002 Fig. 4: per factor setting w (classes, in the dataset's factor order),
    original | manipulation (m in [-1, 1] shown in [0, 1]) | modified."""
    factors = data.sample_factors(rows, rng)
    originals = data.observations_from_factors(factors, rng)
    delta = manipulation.manipulation_delta_fn(network, data.factor_sizes)(factors)
    modified = np.asarray(manipulation.reflect(originals + eps * delta))
    columns = [originals, (delta + 1.0) / 2.0, modified]
    sheet = tile_rows([np.stack([c[i] for c in columns]) for i in range(rows)])
    labels = [f"w = ({', '.join(str(int(v)) for v in f)})" for f in factors]
    return sheet, labels


def pixel_statistics(data, network, eps: float, rng: np.random.Generator, n: int = 2000
                     ) -> dict:
    """How large the manipulation is: |x' - x| and m(w) over n random images."""
    factors = data.sample_factors(n, rng)
    originals = data.observations_from_factors(factors, rng)
    delta = manipulation.manipulation_delta_fn(network, data.factor_sizes)(factors)
    change = np.abs(np.asarray(manipulation.reflect(originals + eps * delta)) - originals)
    return {"images": n, "eps": eps, "mean_abs_change": float(change.mean()),
            "max_abs_change": float(change.max()),
            "fraction_pixels_changed_over_eps_half": float(np.mean(change > eps / 2)),
            "manipulation_mean": float(delta.mean()), "manipulation_std": float(delta.std()),
            "manipulation_abs_mean": float(np.abs(delta).mean()),
            "distinct_manipulations_std_across_images": float(delta.std(axis=0).mean())}


def publish_diagnostics(directory, data, network, eps: float, seed: int,
                        found: dict | None = None) -> dict:
    """Computes the diagnostics of m(w) at eps (perturbations/diagnostics.py; `found`:
    already computed ones), merges them into DIRECTORY/evidence.json and draws
    DIRECTORY/figure.png (original | m(w) | modified of `figure_sheet` from seed, beside
    the key numbers); warns loudly when the artefact is below the minimum effect."""
    if found is None:
        found = diagnostics.manipulation_diagnostics(data, network, eps, seed=seed)
    effect = found["minimum_effect"]
    if effect["below_minimum"]:
        logging.warning("ARTEFACT BELOW THE MINIMUM EFFECT: %s (eps %g): %s; recorded as "
                        "below_minimum_effect in its evidence.json", directory, eps,
                        "; ".join(effect["reasons"]))
    diagnostics.write_evidence(directory, found)
    sheet, labels = figure_sheet(data, network, eps, np.random.default_rng([seed, 7]))
    diagnostics.save_figure(sheet, labels, f"{data.name} (eps {eps:g}): original | m(w) | "
                            "modified", found, pathlib.Path(directory) / "figure.png")
    return found


def run_gate(directory, settings: GenerateSettings) -> dict:
    """The re-adaptation gate of the artefact in `directory` (perturbations/readapt.py),
    published beside its diagnostics; a failure is logged loudly and recorded."""
    from perturbations import readapt
    from perturbations.diagnostics import merge_evidence

    steps = settings.gate_steps
    result = readapt.readaptation(directory, steps, settings.batch_size,
                                  max(1, steps // 10), min(1024, settings.evidence_points),
                                  settings.seed)
    readapt.publish(directory, result)
    passed = result["gate"]["passes"]
    merge_evidence(directory, {"readaptation_gate_passed": passed})
    if not passed:
        logging.warning("ARTEFACT FAILS THE RE-ADAPTATION GATE: %s: %s", directory,
                        "; ".join(readapt.summary_lines(result)[-2:]))
    return result


def reference_migs(original, modified, encoders: dict, seed: int, points: int) -> dict:
    """MIG of each reference encoder's mean on original and modified data (same seed);
    gin's `mig.*` bindings apply (the registered configurable)."""
    mig_fn = metrics_lib.METRICS["mig"].configurable
    out = {}
    for name, encoder in encoders.items():
        def representation(images, encoder=encoder):
            return codes_lib.apply_in_batches(lambda x: encoder(x)["mean"], images, 256)
        out[name] = {variant: mig_fn(data, representation, metrics_lib.metric_rng(seed, "mig"),
                                     num_train=points)["mig"]
                     for variant, data in (("original", original), ("modified", modified))}
    return out


def generate(settings: GenerateSettings, export_path: str | None = None, optimizers=(None, None)
             ) -> pathlib.Path:
    """Runs the whole generation; returns the artefact directory. optimizers: (of m, of the
    reference decoders); None: `manipulation_adam()` and `game_decoder_adam()` (main:
    gin's `manipulation_adam.*` and `game_decoder_adam.*`)."""
    data = generation_data(settings)
    m_optimizer = optimizers[0] or manipulation_adam()
    decoder_optimizer = optimizers[1] or game_decoder_adam()
    game_settings = check_game_settings(pathlib.Path(settings.work_dir) / "manipulation",
                                        settings, [m_optimizer, decoder_optimizer])
    found = gather_references(settings)
    entangled, disentangled = references.choose(
        found, settings.ensemble_size, settings.reference_exclude_overpruned,
        settings.reference_min_mig_gap, settings.reference_thresholds)
    for side, chosen in (("entangled", entangled), ("disentangled", disentangled)):
        logging.info("%s: %s", side, ", ".join(f"{r['run_dir']} (MIG {r['mig']:.3f})"
                                                for r in chosen))
    chosen = {"entangled": entangled, "disentangled": disentangled}
    weights = reference_weights(chosen, settings)
    loaded = {run: references.load_encoder_decoder(source, data.observation_shape)
              for run, (source, _) in weights.items()}
    network = initial_manipulation(data, settings)
    initial_neuron = neuron_kernel(network)
    game = manipulation.ManipulationGame(
        network, [loaded[r["run_dir"]] for r in entangled],
        [loaded[r["run_dir"]] for r in disentangled], settings.eps,
        settings.latent_samples, m_optimizer, decoder_optimizer,
        reconstruction=settings.reconstruction, mean_penalty=settings.mean_penalty,
        neuron_optimizer=scaled_optimizer(m_optimizer, settings.neuron_learning_rate_scale))
    work_dir = pathlib.Path(settings.work_dir) / "manipulation"
    record_game_settings(work_dir, game_settings)
    training = train_lib.train(
        game, lambda first: pipeline.factor_image_dataset(
            data, 4 * settings.batch_size, settings.seed, first),
        settings.steps, work_dir, settings.seed, settings.checkpoint_every,
        settings.log_every, stop_check=manipulation.dead_manipulation_check())

    out = pathlib.Path(settings.output_dir)
    published = publish_references(out, chosen, weights, data)
    describe = lambda r: {"run_dir": r["run_dir"], "seed": r["seed"], "mig": r["mig"],  # noqa: E731
                          "dims_by_posterior_variance": references.dims_by_variance(r),
                          **published[r["run_dir"]]}
    metadata = {"dataset": data.name, "source": data.describe().get("source"),
                "factor_names": list(data.factor_names),
                "factor_sizes": [int(s) for s in data.factor_sizes],
                "observation_shape": list(data.observation_shape), "eps": settings.eps,
                **({"fixed_factors": settings.fixed_factors}
                   if settings.fixed_factors else {}),
                "references": {"entangled": [describe(r) for r in entangled],
                               "disentangled": [describe(r) for r in disentangled],
                               "all_migs": {r["run_dir"]: r["mig"] for r in found},
                               "exclude_overpruned": settings.reference_exclude_overpruned,
                               "min_mig_gap": settings.reference_min_mig_gap,
                               **({"thresholds": settings.reference_thresholds}
                                  if settings.reference_thresholds else {})},
                "training": {"steps": training["steps"], "seed": settings.seed,
                             "batch_size": settings.batch_size,
                             "latent_samples": settings.latent_samples,
                             "reconstruction": settings.reconstruction,
                             "mean_penalty": settings.mean_penalty,
                             "output_init_scale": settings.output_init_scale,
                             "neuron_learning_rate_scale":
                                 settings.neuron_learning_rate_scale,
                             "unit_variance_init": settings.unit_variance_init,
                             "final_terms": training["final_terms"],
                             "seconds": training["seconds"],
                             "game_settings": game_settings,
                             **neuron_record(initial_neuron, neuron_kernel(network))}}
    artefact.save_manipulation(out, network, metadata)
    modified = artefact.load_variant(data, out)
    encoders = {f"{side}:{r['run_dir']}": loaded[r["run_dir"]][0]
                for side, chosen in (("entangled", entangled), ("disentangled", disentangled))
                for r in chosen}
    evidence = {"pixel_statistics": pixel_statistics(
                    data, network, settings.eps, np.random.default_rng([settings.seed, 8])),
                "reference_mig": reference_migs(data, modified, encoders, settings.seed,
                                                settings.evidence_points)}
    write_json(out / "evidence.json", evidence)
    publish_diagnostics(out, data, network, settings.eps, settings.seed)
    if settings.gate_steps:
        run_gate(out, settings)
    for eps in settings.eps_sweep:
        swept = out.parent / f"{out.name}_eps{eps:g}"
        swept.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out / artefact.WEIGHTS, swept / artefact.WEIGHTS)
        shutil.rmtree(swept / REFERENCES, ignore_errors=True)
        shutil.copytree(out / REFERENCES, swept / REFERENCES)
        artefact.write_metadata(swept, {**{k: v for k, v in artefact.read_metadata(out).items()
                                           if k not in ("schema_version", "suite_version")},
                                        "eps": eps, "swept_from": str(out)})
        publish_diagnostics(swept, data, network, eps, settings.seed)
    if export_path:
        export.export_official(modified, export_path)
    write_json(pathlib.Path(settings.work_dir) / FINISHED, finished_record(settings))
    return out


def reference_weights(chosen: dict, settings: GenerateSettings) -> dict:
    """{run_dir: (the run whose weights the game loads, where they came from)} for the
    chosen references ({'entangled': [...], 'disentangled': [...]}): the run itself when
    it kept its checkpoints or is published ('published_from': 'generation'); else (a
    pool from a clone: git keeps no checkpoints) the run retrained from its recorded gin
    config and seed into work_dir/retrained_references/<side><i> (skipped when finished),
    used only if it repeats the recorded run's MIG within references.REPEAT_TOLERANCE
    ('published_from': 'retrained'); a retrained run that does not is refused, never used
    as a stand-in."""
    work_dir = pathlib.Path(settings.work_dir) / "retrained_references"
    found = {}
    for side, runs in chosen.items():
        for i, reference in enumerate(runs):
            if references.has_weights(reference["run_dir"]):
                found[reference["run_dir"]] = (reference, {"published_from": "generation"})
                continue
            found[reference["run_dir"]] = references.weights_source(
                reference["run_dir"], f"{side}{i}", work_dir,
                refusal="the game does not use a stand-in for a chosen reference (restore "
                        "that run's checkpoints/, or choose from a pool trained here)",
                artefacts=settings.reference_artefacts)
    return found


def publish_references(out: pathlib.Path, chosen: dict, weights: dict, data) -> dict:
    """Publishes the chosen references inside the artefact (out/references/<side><i>,
    perturbations/references.py) from the runs `reference_weights` loaded, replacing any
    from an earlier generation there; returns {run_dir: {'published': path relative to
    out, 'sha256': {file: digest}, 'published_from': 'generation' or 'retrained', and
    'retrained_mig' for a retrained one}}."""
    shutil.rmtree(out / REFERENCES, ignore_errors=True)
    found = {}
    for side, runs in chosen.items():
        for i, reference in enumerate(runs):
            source, provenance = weights[reference["run_dir"]]
            relative = f"{REFERENCES}/{side}{i}"
            digests = references.publish(source, out / relative, data.observation_shape)
            found[reference["run_dir"]] = {"published": relative, "sha256": digests,
                                           **provenance}
    return found


@cli_main        # ReferenceError, ArtefactError, DirectoryLocked...: one line, exit 2
def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    with user_errors(ValueError, KeyError, IOError,
                     prefix="invalid generation configuration: "):
        config.parse_config(FLAGS.gin_file, FLAGS.gin_bindings)
        settings = generation_settings()
        generation_data(settings)          # a wrong fixed_factors fails before any training
        # read before the references' gin configs replace the parsed one
        optimizers = [configured_optimizer("manipulation_adam"),
                      configured_optimizer("game_decoder_adam")]
    if FLAGS.dry_run:
        print(plan(settings))
        print("dry run: nothing was trained")
        return
    occupied = occupied_outputs(settings)
    if FLAGS.resume:
        with user_errors(FileNotFoundError):
            check_game_settings(pathlib.Path(settings.work_dir) / "manipulation",
                                settings, optimizers)
        if already_generated(settings):
            print(f"{settings.output_dir}: generated before with these settings "
                  f"({pathlib.Path(settings.work_dir) / FINISHED}); nothing to do")
            return
        started = (pathlib.Path(settings.work_dir) / "manipulation"
                   / "game_settings.json").is_file()
        if occupied and not started:
            raise UserError(f"{', '.join(map(str, occupied))} already hold(s) an artefact "
                            f"that the game in {settings.work_dir} did not make; --resume "
                            "replaces only its own outputs (pass --overwrite to replace it)")
    elif occupied and not FLAGS.overwrite:
        raise UserError(f"{', '.join(map(str, occupied))} already hold(s) an artefact; pass "
                        "--overwrite to replace it, or set generation.output_dir to a new "
                        "directory")
    with user_errors(train_lib.TrainingDiverged, FileNotFoundError):
        with directory_lock(settings.work_dir, "perturbations.generate"):  # one writer
            out = generate(settings, FLAGS.export, optimizers)
    print(out)


if __name__ == "__main__":
    define_flags()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    run_command(main)
