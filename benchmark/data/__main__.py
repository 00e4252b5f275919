"""python -m benchmark.data {preview,export,match} --dataset=dsprites|shapes3d [--variant=noisy] ...

preview: a PNG sheet of random samples plus one traversal row per factor; for a variant
         other than original also OUT's name with .change.json: how much the variant
         changes the images (L-infinity, mean |x' - x|, energy per image;
         benchmark/data/change.py), which study reports list per arm.
export:  the dataset (any variant) in the official file format, for other libraries.
match:   the strength of each --match_arms variant (e.g. noisy,modified_texture) whose
         energy per image (--match_power 2; 1: mean |x' - x|) equals --variant's, the
         energy-matched controls of a study, written to OUT (.json):
         {'reference': {variant, eps, change}, 'power', 'matched': {arm: {eps, change}}},
         each change as benchmark/data/change.py measures it. The study's gin then names
         the arms at those eps (e.g. 'noisy@0.0473').
"""

from __future__ import annotations

import json

from absl import app, flags, logging

from benchmark.core.atomic import write_json
from benchmark.core.errors import cli_main, run_command, user_errors
from benchmark.data import ARTEFACT_VARIANTS, DATASETS, VARIANTS, export, get_dataset, make_variant, preview
from benchmark.data.change import SAMPLE, SAMPLE_ABOVE, arm_change, change_path
from benchmark.data.oracle import mean_change
from benchmark.data.subset import FactorSubset, parse_factor_dict
from perturbations.artefact import load_variant

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command, so that
    importing this module next to another command's flags never clashes)."""
    flags.DEFINE_enum("dataset", "dsprites", list(DATASETS), "Ground-truth dataset.")
    flags.DEFINE_enum("variant", "original", list(VARIANTS), "Dataset variant.")
    flags.DEFINE_enum("source", "auto", ["auto", "procedural", "file"],
                      "Official file, procedural renderer, or the file when present.")
    flags.DEFINE_string("data_dir", None, "Directory of the official files "
                        "(default: $DISENTANGLEMENT_LIB_DATA).")
    flags.DEFINE_float("eps", None, "Noise strength of the noisy variant "
                       "(default: paper 002, 0.1 dSprites / 0.175 Shapes3D).")
    flags.DEFINE_integer("noise_seed", 0, "Seed of the noisy variant's fixed per-image noise.")
    flags.DEFINE_integer("seed", 0, "Seed of the preview's random samples.")
    flags.DEFINE_string("artefact", None, "Perturbation artefact directory (variant 'modified', "
                        "or a noise artefact for 'noisy').")
    flags.DEFINE_string("fixed_factors", None, "Reduce the dataset to its other factors "
                        "first, as data.fixed_factors: a dict literal of factor name to "
                        "class, e.g. \"{'shape': 1, 'scale': 5, 'orientation': 0}\".")
    flags.DEFINE_string("factor_strides", None, "Keep every stride-th class of these free "
                        "factors, as data.factor_strides: a dict literal of factor name to "
                        "stride, e.g. \"{'posY': 2}\".")
    flags.DEFINE_string("factor_ranges", None, "Keep classes start..stop - 1 of these free "
                        "factors, as data.factor_ranges: a dict literal of factor name to "
                        "(start, stop), e.g. \"{'posX': (10, 21)}\".")
    flags.DEFINE_string("out", None, "Output file (PNG for preview; .npz / .h5 for export; "
                        ".json for match).")
    flags.DEFINE_list("match_arms", ["noisy"], "match: the variants to match to --variant "
                      "(each one that takes an eps: noisy, modified_texture, wave, ...).")
    flags.DEFINE_enum("match_power", "2", ["1", "2"], "match: match mean |x' - x|^power; "
                      "2 is the energy a squared-error objective sees.")


COMMANDS = ("preview", "export", "match")


def write_match(original, reference) -> str:
    """`match`: finds and writes each --match_arms variant's matched eps (module
    docstring); ValueError for an arm that takes no eps or cannot reach the target."""
    from perturbations.naive import matched_eps

    if FLAGS.variant == "original":
        raise ValueError("match: expected --variant to be a perturbed variant whose size "
                         "the arms match, found 'original'")
    if not FLAGS.out.endswith(".json"):
        raise ValueError(f"match: expected --out to end in .json, found {FLAGS.out!r}")
    power = int(FLAGS.match_power)
    target = mean_change(reference, power=power, num_images=_sample_size(original))
    matched = {}
    for arm in FLAGS.match_arms:
        if arm not in VARIANTS or arm == "original":
            raise ValueError(f"match: expected --match_arms from "
                             f"{', '.join(v for v in VARIANTS if v != 'original')}, "
                             f"found {arm!r}")

        def make(eps, arm=arm):
            return make_variant(original, arm, eps=eps, seed=FLAGS.noise_seed,
                                artefact=FLAGS.artefact if arm in ARTEFACT_VARIANTS else None,
                                artefact_loader=load_variant)

        eps = matched_eps(make, target, power=power, num_images=_sample_size(original))
        matched[arm] = {"eps": eps, "change": arm_change(original, make(eps))}
        logging.info("%s matched at eps %.5f", arm, eps)
    result = {"dataset": FLAGS.dataset, "fixed_factors": FLAGS.fixed_factors,
              "artefact": FLAGS.artefact, "noise_seed": FLAGS.noise_seed, "power": power,
              "reference": {"variant": FLAGS.variant, "eps": reference.describe().get("eps"),
                            "change": arm_change(original, reference)},
              "matched": matched}
    write_json(FLAGS.out, result)
    print(json.dumps({arm: round(m["eps"], 5) for arm, m in matched.items()}))
    return FLAGS.out


def _sample_size(data) -> int | None:
    """None (every image) where benchmark/data/change.py measures every image, else its
    sample size, so that the match is made on as many images as the change is reported."""
    return None if data.num_images <= SAMPLE_ABOVE else SAMPLE


@cli_main
def main(argv):
    if len(argv) != 2 or argv[1] not in COMMANDS:
        raise app.UsageError(f"expected one command, one of {', '.join(COMMANDS)}; "
                             f"found {' '.join(argv[1:]) or 'none'}")
    if not FLAGS.out:
        raise app.UsageError("--out is required")
    with user_errors(FileNotFoundError, ValueError):    # DataFileError is a ValueError
        original = get_dataset(FLAGS.dataset, FLAGS.source, FLAGS.data_dir)
        if FLAGS.fixed_factors or FLAGS.factor_strides or FLAGS.factor_ranges:
            original = FactorSubset(
                original, parse_factor_dict(FLAGS.fixed_factors or "{}"),
                FLAGS.factor_strides and parse_factor_dict(
                    FLAGS.factor_strides, "--factor_strides", "{'posY': 2}"),
                FLAGS.factor_ranges and parse_factor_dict(
                    FLAGS.factor_ranges, "--factor_ranges", "{'posX': (10, 21)}"))
        data = make_variant(original, FLAGS.variant, eps=FLAGS.eps, seed=FLAGS.noise_seed,
                            artefact=FLAGS.artefact, artefact_loader=load_variant)
        if argv[1] == "match":
            path = write_match(original, data)
        elif argv[1] == "preview":
            title = f"{FLAGS.dataset} ({data.describe()['source']}, {FLAGS.variant})"
            path = preview.save_preview(data, FLAGS.out, seed=FLAGS.seed, title=title)
            if FLAGS.variant != "original":
                measured = change_path(path)
                write_json(measured, {"dataset": FLAGS.dataset, "variant": FLAGS.variant,
                                      "eps": data.describe().get("eps"),
                                      **arm_change(original, data)})
                logging.info("wrote %s", measured)
        else:
            path = export.export_official(data, FLAGS.out)
    logging.info("wrote %s", path)
    print(path)


if __name__ == "__main__":
    define_flags()
    run_command(main)
