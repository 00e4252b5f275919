"""python -m perturbations.readapt DIR [--steps N] [--arms=...] [--seeds=0,1,2
[--compare_to=ARM,...]] [--publish] [--out JSON]

The re-adaptation gate of a manipulation artefact. During the game the
reference decoders are trained alongside m(w), so the gap L_ent - L_dis the game logs is
that of decoders that have chased m for as long as m has chased them: a gap that opens
late can be a transient that decoders given more time close. Here m is frozen (the
artefact's weights) and decoders restarted from the reference models' own checkpoints are
trained on it alone for `steps` updates, exactly as in the game (the frozen encoders see
the original image x, the decoder reconstructs the target from `latent_samples` posterior
samples per image, the artefact's reconstruction loss, Adam 1e-4 of appendix B.1), in
arms that differ only in the target (default the first three):
  original          x                          (how the two references compare anyway)
  modified          reflect(x + eps m(w))      (the artefact)
  modified_texture  reflect(x + eps E_w m(w))  (its fixed-texture control)
  VARIANT@EPS       any other variant of the dataset at a strength, e.g. 'noisy@0.0788'
                    (matched noise) or 'wave@0.06' (the oracle's mixing wave): does the
                    game's objective favour m over them?
  naive@EPS         paper 002 sec. 4.4's "naive way" (perturbations/naive.py): each image
                    moved towards the entangled references' reconstruction and away from
                    the disentangled ones': the objective's positive control
  wave_entangled@EPS  the oracle's wave along the entangled reference's own code
                    direction (its most informative latent's angle in the (posX, posY)
                    plane, recorded as 'wave_entangled_direction_deg'), not the diagonal
  VARIANT@matched   VARIANT (naive, noisy, wave, modified, ...) at the strength whose
                    energy (mean squared change per image, what the squared-error game
                    sees) equals the artefact's, or that of the arm --match_to names (the
                    naive move may not reach a saturated m's energy: --match_to=naive@1
                    matches every arm, m included, to the strongest naive move); the eps
                    found is recorded in 'arm_eps'
Every arm's energy per image, mean |x' - x| and L-infinity change are recorded
('arm_change').
Every `eval_every` updates both sides' losses are measured on one evaluation sample: the
whole grid when the dataset has at most `eval_images` images (the ellipse's 1,024), else
`eval_images` distinct images drawn without replacement; the same images and latent noise
in every arm. It is not held out: the training batches are drawn from the same grid. The
arms share the training batches.

The gate (`gate`): the *advantage* of the modified data is
    (L_ent - L_dis)_modified - (L_ent - L_dis)_original
at the same number of updates: negative when m makes the entangled decoder's job easier
relative to the disentangled one's than the original data already are. The artefact
passes when the advantage after re-adaptation is negative and has not risen over the
second half of the updates (it is not closing), and the modified data differ from the
original by at least one grey level on average (mean |x' - x| >= 1/255, the diagnostics'
minimum effect): below it the arms train on the same images up to rounding, and the sign
of an advantage of 1e-4 is numerical noise (the penalty game's m, mean |x' - x| 1e-6,
"passed" with -0.0006 before this floor). The texture arm's advantage is reported
beside it, and every other arm's (`arm_advantage_end`): an arm with a more negative
advantage than m's is a perturbation the game would have preferred to the m it found.

With --seeds the re-adaptation runs once per seed (batches, the evaluation sample when
it is drawn, and latent noise; the references, the noise's realisation, the naive deltas
and the wave's direction are the same in every seed, so the intervals are those of this
reference pair) and `across_seeds` adds, per arm, the mean advantage at the end with its
(1 - 2 alpha) t interval (90 % at alpha 0.05, the one that matches the one-sided test)
and the test that it is below 0, and for every arm against each arm of --compare_to
(default: the noise arms) the paired one-sided t-test (pairs: the same seed, so the same
batches) that its advantage is lower, i.e. that the game's objective prefers it to that
control (the naive arm, perturbations/naive.py, is the objective's positive control;
until it is shown preferred to noise of the same energy, nothing the objective prefers or
does not prefer can be read as about mixing).

Exit status: 0 done (a failed gate is a result, printed and recorded), 2 when the artefact
or its references cannot be loaded or an argument is invalid (one line `error: ...`).
"""

from __future__ import annotations

import os
import pathlib

import numpy as np
from absl import app, flags, logging

from benchmark.core.arm_label import ArmLabel, base_of
from benchmark.core.atomic import write_json
from benchmark.core.errors import cli_main, run_command, user_errors
from benchmark.data.change import SAMPLE, SAMPLE_ABOVE, arm_change, measured_factors
from perturbations.diagnostics import MIN_MEAN_ABS_CHANGE

FLAGS = flags.FLAGS

#: the default arms of the gate, in the order they run (module docstring)
ARMS = ("original", "modified", "modified_texture")
#: what an interrupted --seeds run must share with its resumption beyond the flags: the
#: evaluation sample and the naive move of this code (neither is a flag)
METHOD = "evaluation sample: grid or distinct draw; naive move clipped (2026-11-27)"
#: arms built from the artefact's reference models (module docstring)
REFERENCE_ARMS = ("naive", "wave_entangled")
#: where --publish writes (the artefact directory) and the key it merges into evidence.json
FIGURE = "readaptation.png"
EVIDENCE_KEY = "readaptation"


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command, so that
    importing this module next to another command's flags never clashes)."""
    flags.DEFINE_integer("steps", 1000, "Decoder updates per arm (the game makes 3 per "
                         "update of m).", lower_bound=1)
    flags.DEFINE_integer("batch_size", 64, "Images per decoder update (the game's).",
                         lower_bound=1)
    flags.DEFINE_integer("eval_every", 100, "Updates between two measurements on the "
                         "evaluation sample.",
                         lower_bound=1)
    flags.DEFINE_integer("eval_images", 1024, "Images of the evaluation sample (the whole "
                         "grid when it has no more).", lower_bound=1)
    flags.DEFINE_integer("seed", 0, "Seed of the batches, the evaluation sample (when drawn) "
                         "and the latent noise.", lower_bound=0)
    flags.DEFINE_string("source", None, "Dataset source (procedural|file|auto); default: "
                        "the one recorded in the artefact's metadata.")
    flags.DEFINE_list("arms", list(ARMS), "Arms to re-adapt on: original, modified and "
                      "others (modified_texture, VARIANT@EPS such as noisy@0.0788).")
    flags.DEFINE_list("seeds", None, "Run once per seed and add the across-seed tests "
                      "(module docstring); replaces --seed.")
    flags.DEFINE_string("match_to", "modified", "The arm whose energy per image the "
                        "'@matched' arms take (default the artefact; e.g. 'naive@1' when m's "
                        "energy is more than the naive move can reach).")
    flags.DEFINE_list("compare_to", None, "With --seeds: the control arms every other arm "
                      "is tested against (default: the arms of noise, noisy@...).")
    flags.DEFINE_string("out", None, "Write the trajectories and the gate as JSON here. "
                        "With --seeds each finished arm is kept in OUT.partial.json, "
                        "so an interrupted run resumes where it stopped.")
    flags.DEFINE_boolean("publish", False, f"Merge the result into DIR/evidence.json "
                         f"(\"{EVIDENCE_KEY}\", other keys kept) and draw DIR/{FIGURE}.")


def gate(evaluations: list[int], gaps: dict, modified_mean_abs: float | None = None) -> dict:
    """The gate's verdict from the evaluation sample's gaps L_ent - L_dis.

    evaluations: update counts of the measurements, increasing, starting at 0 (m >= 2);
    gaps: {arm: list of m gaps}, with at least 'original' and 'modified';
    modified_mean_abs: the modified arm's mean |x' - x| (None: not checked).
    Returns the advantage (modified - original gap) at the start, the middle measurement
    and the end, its rise over the second half (end - middle), every other measured arm's
    advantage at the end ('arm_advantage_end', modified included), and 'passes': advantage
    at the end < 0, rise <= 0, and modified_mean_abs >= MIN_MEAN_ABS_CHANGE when given
    ('below_minimum_change' records whether it was below)."""
    if len(evaluations) < 2:
        raise ValueError(f"the gate needs >= 2 measurements, found {len(evaluations)}")
    for arm in ("original", "modified"):
        if len(gaps.get(arm, ())) != len(evaluations):
            raise ValueError(f"the gate needs {len(evaluations)} gaps of arm {arm!r}, found "
                             f"{len(gaps.get(arm, ()))}")
    advantage = np.asarray(gaps["modified"], float) - np.asarray(gaps["original"], float)
    middle = len(evaluations) // 2
    found = {"updates": int(evaluations[-1]), "middle_updates": int(evaluations[middle]),
             "advantage_start": float(advantage[0]),
             "advantage_middle": float(advantage[middle]),
             "advantage_end": float(advantage[-1]),
             "advantage_rise_second_half": float(advantage[-1] - advantage[middle])}
    found["arm_advantage_end"] = {arm: float(gap[-1] - gaps["original"][-1])
                                  for arm, gap in gaps.items()
                                  if arm != "original" and len(gap) == len(evaluations)}
    below = modified_mean_abs is not None and modified_mean_abs < MIN_MEAN_ABS_CHANGE
    if modified_mean_abs is not None:
        found["modified_mean_abs"] = float(modified_mean_abs)
        found["below_minimum_change"] = bool(below)
    found["passes"] = bool(found["advantage_end"] < 0.0
                           and found["advantage_rise_second_half"] <= 0.0 and not below)
    return found


def _game_settings(metadata: dict, directory) -> tuple[int, str]:
    """(latent samples, reconstruction) the artefact's game trained with."""
    from perturbations.artefact import ArtefactError
    from perturbations.manipulation import RECONSTRUCTIONS

    training = metadata.get("training") if isinstance(metadata.get("training"), dict) else {}
    samples = training.get("latent_samples", 5)
    # artefacts made before the loss was a choice trained with the Bernoulli loss
    reconstruction = training.get("reconstruction", "bernoulli")
    if not (isinstance(samples, int) and samples >= 1) or reconstruction not in RECONSTRUCTIONS:
        raise ArtefactError(f"perturbation artefact {directory}: expected training."
                            f"latent_samples >= 1 and a reconstruction in "
                            f"{sorted(RECONSTRUCTIONS)}, found {samples!r} and "
                            f"{reconstruction!r}")
    return samples, reconstruction


def _update_fn(side_means, variables, optimizer):
    """One compiled decoder update: minimises the sum of every decoder's loss."""
    import tensorflow as tf

    @tf.function(reduce_retracing=True)
    def update(images, targets, step_seed):
        with tf.GradientTape() as tape:
            _, _, total = side_means(images, targets, step_seed)
        optimizer.apply_gradients(zip(tape.gradient(total, variables), variables))
    return update


def _arm_eps(arm: str) -> float | None:
    """The arm's strength as a number (None: none given); ValueError naming the arm and
    the readaptation's grammar otherwise."""
    try:
        return ArmLabel.parse(arm).eps
    except ValueError:
        raise ValueError(f"readaptation arm {arm!r}: expected VARIANT, VARIANT@EPS with a "
                         f"number EPS or VARIANT@matched, found "
                         f"{ArmLabel.parse(arm).strength!r}") from None


def check_arm(arm: str) -> None:
    """ValueError unless `arm` names an arm `arm_dataset` or `matched_arm` can build
    (checked before anything loads)."""
    from benchmark.data import VARIANTS

    label = ArmLabel.parse(arm)
    base, strength = label.base, label.strength
    if strength != "matched":
        _arm_eps(arm)
    fixed = ("original", "modified", "modified_texture")
    known = base in fixed or (base in (*REFERENCE_ARMS, *VARIANTS) and strength)
    if not known or (base == "original" and strength):
        raise ValueError(f"readaptation arm {arm!r}: expected 'original', 'modified', "
                         f"'modified_texture', naive@EPS, wave_entangled@EPS or VARIANT@EPS "
                         f"with VARIANT one of "
                         f"{', '.join(v for v in VARIANTS if v != 'original')} (EPS a number "
                         "or 'matched')")


def arm_dataset(data, directory, arm: str, pairs=None, direction_deg=None):
    """The dataset of one arm: 'original', the artefact's 'modified' / 'modified_texture'
    (at its eps, or '@EPS'), 'naive@EPS' (perturbations/naive.py, from `pairs`: {'entangled':
    [(encoder, decoder)], 'disentangled': [...]}), 'wave_entangled@EPS' (the oracle's wave
    along `direction_deg`, the entangled reference's code direction:
    `entangled_code_direction`), or any other variant 'NAME@EPS' of `data`."""
    from benchmark.data import VARIANTS, make_variant
    from perturbations import artefact
    from perturbations.naive import NaiveData

    base, eps = ArmLabel.parse(arm).base, _arm_eps(arm)
    if base == "original" and eps is None:
        return data
    if base in ("modified", "modified_texture"):
        return artefact.load_variant(data, directory, eps, texture=base == "modified_texture")
    if base == "naive" and eps is not None:
        return NaiveData(data, eps, pairs["entangled"], pairs["disentangled"])
    if base == "wave_entangled" and eps is not None:
        return make_variant(data, "wave", eps=eps, wave_direction=direction_deg)
    if base not in VARIANTS or base == "original" or eps is None:
        raise ValueError(f"readaptation arm {arm!r}: expected 'original', 'modified', "
                         f"'modified_texture', naive@EPS or VARIANT@EPS with VARIANT one of "
                         f"{', '.join(v for v in VARIANTS if v != 'original')}")
    return make_variant(data, base, eps=eps)


def matched_arm(data, directory, arm: str, target_energy: float, pairs=None,
                direction_deg=None):
    """(dataset, eps) of 'VARIANT@matched': the arm at the eps whose energy (mean
    (x' - x)^2) equals `target_energy`, the artefact's (naive.matched_eps)."""
    from perturbations.naive import matched_eps

    from perturbations import artefact

    base = base_of(arm)
    if base == "naive":
        built = arm_dataset(data, directory, "naive@1", pairs)
        make = built.at
    elif base in ("modified", "modified_texture"):
        def make(eps):
            return artefact.load_variant(data, directory, eps,
                                         texture=base == "modified_texture")
    else:
        def make(eps):
            return arm_dataset(data, directory, f"{base}@{eps!r}", pairs, direction_deg)
    eps = matched_eps(make, target_energy,
                      num_images=None if data.num_images <= SAMPLE_ABOVE else SAMPLE)
    return make(eps), eps


def entangled_code_direction(data, encoder, reference: dict) -> float:
    """The direction (degrees in [0, 180) of the (posX, posY) plane) of the entangled
    reference's most informative latent (least posterior variance): the angle of its linear
    fit on the two positions (benchmark/metrics/alignment.py), on every image of `data` (or
    the seeded sample `arm_change` uses). The wave along it moves the data's local geometry
    towards the entangled code, not towards the fixed diagonal."""
    from benchmark.data.oracle import ORACLE_FACTORS
    from benchmark.metrics import codes as codes_lib
    from benchmark.metrics.alignment import linear_angles
    from perturbations.references import dims_by_variance

    missing = [n for n in ORACLE_FACTORS if n not in data.factor_names]
    if missing:
        raise ValueError(f"readaptation arm wave_entangled: expected a dataset with the "
                         f"factors {list(ORACLE_FACTORS)}, found {list(data.factor_names)}")
    factors = measured_factors(data)
    codes = codes_lib.apply_in_batches(lambda x: encoder(x)["mean"],
                                       data.observations_from_factors(factors), 256)
    columns = [list(data.factor_names).index(n) for n in ORACLE_FACTORS]
    angles = linear_angles(factors, np.asarray(codes), columns)["angle_deg"]
    return float(angles[dims_by_variance(reference)[0]])


def readaptation(directory, steps: int = 1000, batch_size: int = 64, eval_every: int = 100,
                 eval_images: int = 1024, seed: int = 0, source: str | None = None,
                 arms=ARMS, match_to: str = "modified", finished_arms=None,
                 on_arm=None) -> dict:
    """Runs the re-adaptation of the artefact in `directory` (module docstring).
    match_to: the arm whose energy the '@matched' arms take (one of `arms`, not itself
    '@matched'; default the artefact). finished_arms: {arm: curve} already run with these
    very arguments (an interrupted run's), kept rather than run again (the arms are
    independent: each restarts the decoders and draws its own batches); on_arm: called
    with the result so far after every arm, to save it.

    Returns {'artefact', settings..., 'references', 'evaluations': [update counts],
    'arms': {arm: {'entangled', 'disentangled', 'gap': lists over evaluations,
    'seconds'}}, 'gate': `gate(...)`}; losses are the game's (per image, summed over
    pixels, mean over images and latent samples). ArtefactError / ReferenceError (one
    clear line) when the artefact or its references cannot be loaded."""
    import tensorflow as tf
    from tqdm import tqdm

    from models.optimizers import game_decoder_adam
    from perturbations import diagnostics, references
    from perturbations.manipulation import RECONSTRUCTIONS, decoded_loss

    for name, value in (("steps", steps), ("batch_size", batch_size),
                        ("eval_every", eval_every), ("eval_images", eval_images)):
        if int(value) < 1:
            raise ValueError(f"readaptation {name} must be >= 1, found {value}")
    arms = list(arms)
    for arm in arms:
        check_arm(arm)
    if match_to not in arms or match_to.endswith("@matched"):
        raise ValueError(f"readaptation match_to: expected one of the arms that is not "
                         f"itself '@matched' ({[a for a in arms if not a.endswith('@matched')]})"
                         f", found {match_to!r}")
    if not {"original", "modified"} <= set(arms) or len(set(arms)) != len(arms):
        raise ValueError(f"readaptation arms: expected 'original', 'modified' and other "
                         f"distinct variants ('modified_texture', 'noisy@0.08', ...), found "
                         f"{arms}")
    data, _, metadata = diagnostics.load_manipulation_artefact(directory, source)
    dirs = references.recorded_references(metadata, directory)
    provenance = {side: [e.get("published_from") for e in metadata["references"][side]]
                  for side in dirs}
    if any(p == "retrained_different" for sides in provenance.values() for p in sides):
        logging.warning("%s: some references are retrained runs that differ from the ones "
                        "the artefact was made from (published_from "
                        "'retrained_different'): %s", directory, provenance)
    latent_samples, reconstruction = _game_settings(metadata, directory)
    loss_fn = RECONSTRUCTIONS[reconstruction]
    found_refs = {side: [references.read_reference(r) for r in runs]
                  for side, runs in dirs.items()}
    pairs, direction = None, None
    if any(base_of(arm) in REFERENCE_ARMS for arm in arms):
        pairs = {side: [references.load_encoder_decoder(r, data.observation_shape)
                        for r in refs] for side, refs in found_refs.items()}
    if any(base_of(arm) == "wave_entangled" for arm in arms):
        direction = entangled_code_direction(data, pairs["entangled"][0][0],
                                             found_refs["entangled"][0])
        logging.info("wave_entangled: direction %.1f degrees (the entangled reference's "
                     "code)", direction)
    targets_of, arm_eps = {}, {}
    for arm in arms:
        if arm.endswith("@matched"):
            continue
        targets_of[arm] = arm_dataset(data, directory, arm, pairs, direction)
    target = arm_change(data, targets_of[match_to])["energy_per_image"]
    for arm in arms:
        if arm.endswith("@matched"):
            targets_of[arm], arm_eps[arm] = matched_arm(
                data, directory, arm, target / float(np.prod(data.observation_shape)), pairs,
                direction)
            logging.info("%s: eps %.4f (energy %.1f per image, %s's)", arm, arm_eps[arm],
                         target, match_to)
    targets_of = {arm: targets_of[arm] for arm in arms}

    sample = evaluation_factors(data, int(eval_images), seed)
    sample_images = data.observations_from_factors(sample)
    evaluations = sorted({0, *range(int(eval_every), int(steps), int(eval_every)), int(steps)})
    result = {"artefact": str(directory), "eps": metadata["eps"], "steps": int(steps),
              "batch_size": int(batch_size), "eval_images": len(sample),
              "eval_sample": ("grid" if len(sample) == data.num_images
                              else "drawn without replacement"),
              "seed": int(seed), "latent_samples": latent_samples,
              "reconstruction": reconstruction, "optimizer": "Adam 1e-4 (appendix B.1)",
              "references": dirs, "evaluations": evaluations, "arms": {},
              "references_published_from": provenance,
              "wave_entangled_direction_deg": direction, "match_to": match_to,
              "arm_eps": arm_eps,
              "arm_change": {arm: arm_change(data, variant)
                             for arm, variant in targets_of.items() if arm != "original"}}

    for arm in arms:
        if arm in (finished_arms or {}):
            result["arms"][arm] = finished_arms[arm]
            logging.info("re-adaptation %s: kept from the interrupted run", arm)
            continue
        variant = targets_of[arm]
        sample_targets = variant.observations_from_factors(sample)
        sides = {side: [references.load_encoder_decoder(r, data.observation_shape)
                        for r in refs] for side, refs in found_refs.items()}
        pairs = sides["entangled"] + sides["disentangled"]
        variables = [v for _, d in pairs for v in d.trainable_variables]
        optimizer = game_decoder_adam()
        optimizer.build(variables)           # Keras 3: outside tf.function

        def side_means(images, targets, step_seed, pairs=pairs):
            seeds = tf.random.experimental.stateless_split(step_seed, len(pairs))
            each = [decoded_loss(e, d, images, targets, latent_samples, loss_fn, seeds[i])
                    for i, (e, d) in enumerate(pairs)]
            n_ent = len(sides["entangled"])
            return (tf.add_n(each[:n_ent]) / n_ent,
                    tf.add_n(each[n_ent:]) / (len(each) - n_ent), tf.add_n(each))

        update = _update_fn(side_means, variables, optimizer)

        def sample_losses(side_means=side_means):
            totals = np.zeros(2)
            for start in range(0, len(sample), 256):
                chunk = slice(start, start + 256)
                ent, dis, _ = side_means(tf.constant(sample_images[chunk]),
                                         tf.constant(sample_targets[chunk]),
                                         tf.constant([seed, 2 + start], tf.int64))
                totals += np.array([float(ent), float(dis)]) * len(sample_images[chunk])
            return totals / len(sample)

        rng = np.random.default_rng([seed, 3])          # the same batches in every arm
        curve = {"entangled": [], "disentangled": [], "gap": []}
        started = tf.timestamp()
        for step in tqdm(range(int(steps) + 1), desc=f"re-adapting ({arm})", leave=False):
            if step in evaluations:
                ent, dis = sample_losses()
                curve["entangled"].append(float(ent))
                curve["disentangled"].append(float(dis))
                curve["gap"].append(float(ent - dis))
            if step == int(steps):
                break
            factors = data.sample_factors(int(batch_size), rng)
            update(tf.constant(data.observations_from_factors(factors)),
                   tf.constant(variant.observations_from_factors(factors)),
                   tf.constant([seed, 10_000 + step], tf.int64))
        curve["seconds"] = float(tf.timestamp() - started)
        logging.info("re-adaptation %s: L_ent - L_dis %.2f -> %.2f (%.0f s)", arm,
                     curve["gap"][0], curve["gap"][-1], curve["seconds"])
        result["arms"][arm] = curve
        if on_arm is not None:
            on_arm(result)
    result["gate"] = gate(evaluations, {a: c["gap"] for a, c in result["arms"].items()},
                          result["arm_change"].get("modified", {}).get("mean_abs"))
    return result


def evaluation_factors(data, eval_images: int, seed: int) -> np.ndarray:
    """int64 (n, k): every factor vector of the grid when data has at most eval_images
    images, else eval_images distinct ones drawn with np.random.default_rng([seed, 1])."""
    if data.num_images <= eval_images:
        return data.factors_of(np.arange(data.num_images))
    chosen = np.random.default_rng([seed, 1]).choice(data.num_images, eval_images,
                                                     replace=False)
    return data.factors_of(np.sort(chosen))


def across_seeds(runs: dict, compare_to=None, alpha: float = 0.05) -> dict:
    """Across-seed tests of re-adaptations of one artefact (module docstring).

    runs: {seed: `readaptation` result}, >= 2, with the same arms; compare_to: control arms
    (None: those whose variant is 'noisy'). Returns {'seeds', 'compare_to', 'arms': {arm:
    {'advantage_end': [per seed], 'mean', 'ci_low', 'ci_high', 'p_below_zero'}},
    'preferred': {arm: {control: stats.paired record of arm - control, alternative
    'less', plus 'family', 'p_holm' and 'preferred': p_holm < alpha}}}. Families (Holm
    within each): 'control' holds the positive control's comparisons (the naive arms),
    'arms' every other arm's."""
    from benchmark.statistics import stats

    seeds = sorted(runs)
    if len(seeds) < 2:
        raise ValueError(f"across-seed tests need >= 2 seeds, found {seeds}")
    arms = list(runs[seeds[0]]["gate"]["arm_advantage_end"])
    for seed in seeds:     # the same arms, in any order (a resumed seed lists its kept first)
        if sorted(runs[seed]["gate"]["arm_advantage_end"]) != sorted(arms):
            raise ValueError(f"seed {seed}: expected the arms {sorted(arms)}, found "
                             f"{sorted(runs[seed]['gate']['arm_advantage_end'])}")
    controls = ([a for a in arms if base_of(a) == "noisy"] if compare_to is None
                else list(compare_to))
    unknown = [c for c in controls if c not in arms]
    if unknown:
        raise ValueError(f"--compare_to: {unknown} are not arms of this re-adaptation "
                         f"(its arms besides original: {arms})")
    values = {a: [runs[s]["gate"]["arm_advantage_end"][a] for s in seeds] for a in arms}
    out = {"seeds": seeds, "compare_to": controls, "alpha": alpha, "arms": {},
           "preferred": {}}
    confidence = 1 - 2 * alpha           # the interval that matches a one-sided test
    for arm, found in values.items():
        test = stats.paired(found, [0.0] * len(found), "less", confidence)
        out["arms"][arm] = {"advantage_end": found, "mean": test["diff"],
                            "ci_low": test["ci_low"], "ci_high": test["ci_high"],
                            "p_below_zero": test["p"]}
    tests = []
    for arm in arms:
        if arm in controls:
            continue
        out["preferred"][arm] = {}
        family = "control" if base_of(arm) == "naive" else "arms"
        for control in controls:
            test = {**stats.paired(values[arm], values[control], "less", confidence),
                    "family": family}
            out["preferred"][arm][control] = test
            tests.append(test)
    for family in ("control", "arms"):
        members = [t for t in tests if t["family"] == family]
        for test, adjusted in zip(members, stats.adjust([t["p"] for t in members])):
            test.update(p_holm=adjusted, preferred=adjusted < alpha)
    return out


def across_lines(summary: dict) -> list[str]:
    """`across_seeds` as short lines of text."""
    n = len(summary["seeds"])
    level = 100 * (1 - 2 * summary.get("alpha", 0.05))
    lines = [f"across {n} seeds, advantage at the end (vs original; mean [{level:g} % t CI, "
             "the one-sided test's], one-sided p that it is below 0):"]
    lines += [f"  {arm}: {a['mean']:+.2f} [{a['ci_low']:+.2f}, {a['ci_high']:+.2f}], "
              f"p {a['p_below_zero']:.3g}" for arm, a in summary["arms"].items()]
    for arm, against in summary["preferred"].items():
        for control, t in against.items():
            lines.append(f"  {arm} vs {control}: {t['diff']:+.2f} [{t['ci_low']:+.2f}, "
                         f"{t['ci_high']:+.2f}], paired one-sided p {t['p']:.3g} "
                         f"(Holm, family '{t['family']}', {t['p_holm']:.3g}): "
                         + ("preferred by the objective" if t["preferred"] else
                            "not shown to be preferred"))
    return lines


def summary_lines(result: dict) -> list[str]:
    """The gate's numbers as short lines of text."""
    g = result["gate"]
    lines = [f"{arm}: L_ent - L_dis {c['gap'][0]:.2f} -> {c['gap'][-1]:.2f} "
             f"(L_ent {c['entangled'][-1]:.2f}, L_dis {c['disentangled'][-1]:.2f})"
             for arm, c in result["arms"].items()]
    lines.append(f"advantage of the modified data (vs original) after {g['updates']} "
                 f"updates: {g['advantage_end']:+.2f} (start {g['advantage_start']:+.2f}, "
                 f"rise over the second half {g['advantage_rise_second_half']:+.2f})")
    for arm, advantage in g["arm_advantage_end"].items():
        if arm != "modified":
            lines.append(f"{arm}'s advantage (vs original): {advantage:+.2f}")
    if g.get("below_minimum_change"):
        lines.append(f"the modified data differ from the original by mean |x' - x| "
                     f"{g['modified_mean_abs']:.2g} < {MIN_MEAN_ABS_CHANGE:.4f} (one grey "
                     "level): the advantage's sign is numerical noise")
    lines.append(f"gate: {'passes' if g['passes'] else 'FAILS'} (advantage < 0 and not "
                 "rising over the second half, on data changed by at least a grey level)")
    return lines


def save_figure(result: dict, path) -> None:
    """L_ent - L_dis on the held-out sample against decoder updates, one line per arm
    (PNG, temp name then renamed; matplotlib through Figure only: the caller's backend is
    kept)."""
    from matplotlib.figure import Figure

    from benchmark.core.atomic import atomic_path

    figure = Figure(figsize=(6, 3.5), dpi=100)
    axis = figure.add_subplot()
    for arm, curve in result["arms"].items():
        axis.plot(result["evaluations"], curve["gap"], marker=".", label=arm)
    axis.axhline(0.0, color="grey", linewidth=0.5)
    axis.set_xlabel("decoder updates with m frozen")
    axis.set_ylabel("L_ent - L_dis (evaluation sample)")
    axis.set_title(f"re-adaptation: {'passes' if result['gate']['passes'] else 'fails'}")
    axis.legend()
    figure.tight_layout()
    with atomic_path(pathlib.Path(path), ".png") as tmp:
        figure.savefig(tmp, format="png")


def publish(directory, result: dict) -> None:
    """Merges `result` into DIRECTORY/evidence.json under EVIDENCE_KEY (other keys kept;
    atomic) and draws DIRECTORY/FIGURE."""
    from perturbations.diagnostics import merge_evidence

    merge_evidence(directory, {EVIDENCE_KEY: result})
    save_figure(result, pathlib.Path(directory) / FIGURE)


def partial_record(settings: dict, runs: dict, in_progress=None) -> dict:
    """The content of OUT.partial.json: settings, {str(seed): run}, the seed in progress,
    and the SHA-256 of the three (`content_sha256`), by which `finished_seeds` tells a file
    it wrote from a damaged or edited one."""
    record = {"settings": settings, "runs": {str(s): r for s, r in runs.items()},
              "in_progress": in_progress}
    return {**record, "sha256": content_sha256(record)}


def content_sha256(record: dict) -> str:
    import hashlib
    import json
    text = json.dumps({k: record.get(k) for k in ("settings", "runs", "in_progress")},
                      sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _check_run(run, where: str) -> None:
    """A per-seed run as `readaptation` returns it, as far as resuming reads it."""
    gate_ = run.get("gate") if isinstance(run, dict) else None
    advantages = gate_.get("arm_advantage_end") if isinstance(gate_, dict) else None
    if not (isinstance(run.get("arms") if isinstance(run, dict) else None, dict)
            and isinstance(advantages, dict)
            and all(isinstance(v, (int, float)) for v in advantages.values())):
        raise ValueError(f"{where}: expected a re-adaptation with 'arms' and "
                         f"'gate.arm_advantage_end', found {str(run)[:80]!r}")


def finished_seeds(partial, settings: dict) -> tuple[dict, dict | None]:
    """What an interrupted `--seeds ... --out OUT` left in `partial` (OUT.partial.json,
    rewritten after every arm): ({seed: finished run}, {'seed', 'arms': {arm: curve}} of
    the seed it was in, or None); ({}, None) when there is no such file. ValueError (one
    line) when it is damaged, edited or not one this command wrote (its SHA-256 does not
    match its content, or its content is not shaped as written), and when it was written
    with other settings, so that runs made with different flags are never pooled."""
    if partial is None or not partial.exists():
        return {}, None
    import json
    restart = "; delete it to start again"
    try:
        stored = json.loads(partial.read_text())
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"{partial}: expected the per-seed runs of an interrupted --seeds "
                         f"run, found unreadable JSON ({error}){restart}") from None
    if not isinstance(stored, dict) or not isinstance(stored.get("settings"), dict):
        raise ValueError(f"{partial}: expected the per-seed runs of an interrupted --seeds "
                         f"run (an object with 'settings'), found {str(stored)[:80]!r}"
                         f"{restart}")
    if stored.get("sha256") != content_sha256(stored):
        raise ValueError(f"{partial}: its content does not match its SHA-256 (damaged, "
                         f"edited, or written before checksums){restart}")
    found, runs, started = stored["settings"], stored.get("runs"), stored.get("in_progress")
    if found != settings:
        changed = sorted(k for k in set(found) | set(settings)
                         if found.get(k) != settings.get(k))
        if changed == ["method"]:
            raise ValueError(f"{partial} was written by another version of readapt "
                             f"({found.get('method')!r}, now {settings['method']!r}: the "
                             "evaluation sample and the naive move changed, no flag sets "
                             "them); delete it to start again")
        raise ValueError(f"{partial} holds runs made with other settings ({changed}: "
                         f"{[found.get(k) for k in changed]} there, "
                         f"{[settings.get(k) for k in changed]} now); rerun with those "
                         f"flags or delete it to start again")
    if not isinstance(runs, dict) or not all(str(k).isdigit() for k in runs):
        raise ValueError(f"{partial}: expected 'runs' as {{seed: run}}, found "
                         f"{str(runs)[:80]!r}{restart}")
    for seed, run in runs.items():
        _check_run(run, f"{partial} seed {seed}")
    if started is not None and not (isinstance(started, dict)
                                    and isinstance(started.get("seed"), int)
                                    and isinstance(started.get("arms"), dict)):
        raise ValueError(f"{partial}: expected 'in_progress' as {{'seed', 'arms'}} or null, "
                         f"found {str(started)[:80]!r}{restart}")
    return {int(seed): run for seed, run in runs.items()}, started


@cli_main
def main(argv):
    if len(argv) != 2:
        raise app.UsageError("expected one artefact directory: python -m perturbations."
                             "readapt DIR [--steps N] [--publish] [--out JSON]")
    directory = pathlib.Path(argv[1])
    if FLAGS.seeds is not None:
        if FLAGS.publish:
            raise app.UsageError("--publish records one re-adaptation; with --seeds write "
                                 "the runs and their tests with --out")
        with user_errors(ValueError):
            seeds = sorted({int(s) for s in FLAGS.seeds})
            if len(seeds) < 2 or min(seeds) < 0:
                raise ValueError(f"--seeds: expected at least 2 distinct seeds >= 0, found "
                                 f"{FLAGS.seeds}")
            if FLAGS.compare_to is not None:
                missing = [c for c in FLAGS.compare_to if c not in FLAGS.arms]
                if missing:
                    raise ValueError(f"--compare_to: {missing} are not in --arms "
                                     f"{FLAGS.arms}")
        settings = {"artefact": str(directory), "steps": FLAGS.steps,
                    "batch_size": FLAGS.batch_size, "eval_every": FLAGS.eval_every,
                    "eval_images": FLAGS.eval_images, "source": FLAGS.source,
                    "arms": list(FLAGS.arms), "match_to": FLAGS.match_to,
                    "method": METHOD}
        partial = pathlib.Path(f"{FLAGS.out}.partial.json") if FLAGS.out else None
        with user_errors(OSError, ValueError):
            runs, started = finished_seeds(partial, settings)

            def save(in_progress=None):
                if partial is not None:
                    write_json(partial, partial_record(settings, runs, in_progress))
            for seed in seeds:
                if seed in runs:
                    print(f"{directory} seed {seed}: reused from {partial}")
                    continue
                kept = started["arms"] if started and started["seed"] == seed else None
                runs[seed] = readaptation(
                    directory, FLAGS.steps, FLAGS.batch_size, FLAGS.eval_every,
                    FLAGS.eval_images, seed, FLAGS.source, FLAGS.arms, FLAGS.match_to,
                    finished_arms=kept,
                    on_arm=lambda r, seed=seed: save({"seed": seed, "arms": r["arms"]}))
                print("\n".join([f"{directory} seed {seed}"] + summary_lines(runs[seed])))
                save()
            runs = {seed: runs[seed] for seed in seeds}
            summary = across_seeds(runs, FLAGS.compare_to)
        print("\n".join(across_lines(summary)))
        if FLAGS.out:
            write_json(FLAGS.out, {"runs": {str(s): r for s, r in runs.items()},
                                   "across_seeds": summary})
            partial.unlink(missing_ok=True)
            print(f"wrote {FLAGS.out}")
        return
    with user_errors(OSError, ValueError):     # ArtefactError, ReferenceError: UserErrors
        result = readaptation(directory, FLAGS.steps, FLAGS.batch_size, FLAGS.eval_every,
                              FLAGS.eval_images, FLAGS.seed, FLAGS.source, FLAGS.arms,
                              FLAGS.match_to)
    print("\n".join([str(directory)] + summary_lines(result)))
    if FLAGS.out:
        write_json(FLAGS.out, result)
        print(f"wrote {FLAGS.out}")
    if FLAGS.publish:
        publish(directory, result)
        print(f"wrote {directory / 'evidence.json'} and {directory / FIGURE}")


if __name__ == "__main__":
    define_flags()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    run_command(main)
