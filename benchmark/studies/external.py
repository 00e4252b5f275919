"""Audit a method trained in any framework: `python -m benchmark.audit export` and `score`.

    python -m benchmark.audit export --out=DIR [--reference=results/geometry_cpu]
        [--seeds=0,1,2,3,4] [--strengths=...]
    ... train the method elsewhere on each arm's images, write one codes file per arm and
        seed (below) ...
    python -m benchmark.audit score --export=DIR --name=NAME [--output_dir=...]

`export` writes, for every arm of the reference battery (benchmark/studies/battery.py), every image
of the arm in the dataset's official format (`benchmark.data export`: the dSprites npz,
images as grey levels k/255 in float16 where the arm is not binary, 0/1 uint8 where it
is; the Shapes3D h5, uint8) under DIR/<arm>/, and DIR/manifest.json: the reference, the battery, the arms
(variant, file, number of images, SHA-256), the seeds, and where the codes go. Train the
method on an arm's file (one model per arm and seed), encode *every image of that file in
its order* and write DIR/codes/<arm>/seed<S>.npz with one array `codes`, float (n_images,
d): row i is the code of image i (the mean of an encoder's posterior, say). Files are
data: read with allow_pickle=False.

`score` checks every codes file (present, the arm's number of rows, finite floats), then
scores each as the suite scores its own runs (`benchmark.runs.run.evaluate_representation`: the
reference's metric settings, the run seed's shared evaluation sample drawn from the arm's
images, each image's code looked up from the file by the image's exported pixels), writes
a run directory per arm and seed (results.json, eval_codes.npz) under --output_dir/runs/,
and decides the verdict with the audit's own statistics
(`benchmark.studies.audit_report.write_audit`). A run already scored there from a codes
file of the same SHA-256 under the same run bindings is kept, not scored again: scoring
again once the reference has more runs re-decides the verdict in seconds.
Health measures that need the model (active dims, over-pruning) are unknown for codes from
elsewhere, so no such run counts as over-pruned.

The export holds whole arms, so it is for batteries on small datasets (at most
MAX_IMAGES images an arm; the geometry battery's ellipse has 1,024).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pathlib

import gin
import numpy as np

from benchmark.core import config
from benchmark.core.atomic import write_json
from benchmark.core.errors import ConfigError
from benchmark.core.lock import directory_lock
from benchmark.metrics import codes as codes_lib
from benchmark.studies import battery as battery_lib
from benchmark.studies import study

#: the most images an exported arm may have (its whole grid is written)
MAX_IMAGES = 65536
MANIFEST = "manifest.json"
#: the placeholder method whose run settings carry an arm's data and metric bindings
PLACEHOLDER_GIN = "models/ae.gin"


def arm_specs(settings: study.StudySettings) -> list:
    """[(arm label, variant, [run spec of each seed])] of an audit's settings
    (benchmark.studies.audit.audit_settings, with a placeholder method)."""
    dataset = settings.datasets[0]
    return [(battery_lib.label(variant, dataset), variant,
             study.expand(dataclasses.replace(settings, variants=(variant,))))
            for variant in settings.variants]


def _load(spec) -> tuple:
    """(data, run settings) of one run spec, as the runner builds them."""
    from benchmark.data import load_data
    from benchmark.runs import run
    from perturbations.artefact import load_variant
    gin.clear_config()
    config.parse_config(list(spec.gin_files), list(spec.bindings))
    return load_data(artefact_loader=load_variant), run.run_settings()


def _pixels(images: np.ndarray, binary: bool) -> np.ndarray:
    """Images in [0, 1] as the export writes them (benchmark/data/export.py)."""
    if binary:
        return (images >= 0.5).astype(np.uint8)
    return np.rint(images * 255.0).astype(np.uint8)


def _digest(pixels: np.ndarray) -> bytes:
    return hashlib.blake2b(np.ascontiguousarray(pixels).tobytes(), digest_size=16).digest()


def _binary(data) -> bool:
    """Whether the export wrote 0/1 images (dSprites' original arm; benchmark/data/export.py
    writes every other arm, and every Shapes3D one, in grey levels)."""
    return data.name == "dsprites" and data.describe().get("variant", "original") == "original"


def _arm_digest(data) -> str:
    """A digest of every image of the arm as the export writes it, in index order: `score`
    checks that the images it scores are the ones that were exported."""
    binary, total = _binary(data), hashlib.blake2b(digest_size=16)
    for start in range(0, data.num_images, 1024):
        indices = np.arange(start, min(start + 1024, data.num_images))
        for pixels in _pixels(data.images(indices), binary):
            total.update(_digest(pixels))
    return total.hexdigest()


def export(reference_dir, reference: dict, settings: study.StudySettings, out, strengths=None
           ) -> pathlib.Path:
    """Writes every arm's images and the manifest into `out`; returns the manifest path.
    reference, settings: the reference study's settings and the audit's, with the
    PLACEHOLDER_GIN method (benchmark.studies.audit builds them)."""
    from benchmark.data.export import export_official
    from benchmark.data.files import file_sha256
    arms = arm_specs(settings)
    seeds = settings.seeds
    out = pathlib.Path(out)
    manifest_arms = {}
    for label, variant, specs in arms:
        data, _ = _load(specs[0])
        if data.num_images > MAX_IMAGES:
            raise ConfigError(f"export: expected arms of at most {MAX_IMAGES} images (the "
                              f"whole arm is written), found {data.num_images} in {label}; "
                              "use a battery on a reduced dataset (the geometry battery)")
        suffix = ".npz" if data.name == "dsprites" else ".h5"
        path = out / label / f"{data.name}_{label}{suffix}"
        path.parent.mkdir(parents=True, exist_ok=True)
        export_official(data, str(path), progress=False, grey_levels=True)
        manifest_arms[label] = {"variant": variant, "file": str(path.relative_to(out)),
                                "images": int(data.num_images),
                                "pixels_digest": _arm_digest(data),
                                "sha256": file_sha256(path),
                                "codes": [f"codes/{label}/seed{s}.npz" for s in seeds]}
    return write_json(out / MANIFEST, {
        "reference": str(pathlib.Path(reference_dir).resolve()),
        "reference_name": reference.get("name"), "battery": settings.battery,
        "seeds": [int(s) for s in seeds],
        "strengths": None if strengths is None else [float(s) for s in strengths],
        "arms": manifest_arms,
        "images": images_format(data),
        "protocol": protocol(reference, settings),
        "codes_format": "one npz per arm and seed with the array 'codes', float "
                        "(images, d): row i the code of image i of the arm's file"})


def images_format(data) -> dict:
    """How every arm's file stores its images and factors (the same for all arms)."""
    from benchmark.data.export import official_grid, subset_of
    from benchmark.data.files import DSPRITES_LATENT_NAMES
    sizes, _, fixed = official_grid(data)
    dsprites = data.name == "dsprites"
    whole = getattr(subset_of(data), "base", None) or data
    names = list(DSPRITES_LATENT_NAMES) if dsprites else list(whole.factor_names)
    sizes = [1, *sizes] if dsprites else list(sizes)
    return {
        "dtype": "float16" if dsprites else "uint8",
        "range": [0, 1] if dsprites else [0, 255],
        "scale": ("every arm, the original included: pixel values in [0, 1], no division "
                  "by 255" if dsprites else "uint8 in [0, 255]: divide by 255"),
        "read_keys": (["imgs", "latents_classes", "latents_values"] if dsprites
                      else ["images", "labels"]),
        "note": ("'metadata' is a pickled dict as in the official file: read the keys "
                 "above with allow_pickle=False; this manifest holds what it says"
                 if dsprites else "the official 3dshapes.h5 layout"),
        "factor_names": names, "factor_sizes": [int(n) for n in sizes],
        "varying_factors": [n for n, size in zip(names, sizes) if size > 1],
        "fixed_factors": fixed,
    }


def protocol(reference: dict, settings: dict) -> dict:
    """The reference's training protocol, which a comparable external model follows: the
    bindings every reference run shares (steps, batch, latents, data) and each reference
    model's gin file (its method's own settings, e.g. beta)."""
    return {"bindings": list(reference.get("bindings", [])),
            "models": dict(reference.get("models", {})),
            "note": "train the method as the reference models were (same number of latents, "
                    "steps and batch where they apply), once per seed, on each arm's file"}


def _check_arm_files(export_dir: pathlib.Path, manifest: dict) -> None:
    """Each arm's exported image file is the one the export wrote (its SHA-256 as the
    manifest records it): the codes' row i belongs to image i of that file, so codes of
    a replaced or damaged file would be scored against the wrong images."""
    from benchmark.data.files import file_sha256
    for label, entry in manifest["arms"].items():
        relative = entry.get("file")
        if not (isinstance(relative, str) and isinstance(entry.get("sha256"), str)):
            raise ValueError(f"{export_dir / MANIFEST}: expected arm {label} with its 'file' "
                             f"and 'sha256', found {str(entry)[:120]!r}")
        path = (export_dir / relative).resolve()
        if not path.is_relative_to(export_dir.resolve()):
            raise ValueError(f"{export_dir / MANIFEST}: arm {label}'s file {relative!r} is "
                             "outside the export")
        if not path.is_file():
            raise FileNotFoundError(f"{export_dir}: expected arm {label}'s exported images "
                                    f"at {relative} (score checks the codes were made from "
                                    "them), found none")
        if file_sha256(path) != entry["sha256"]:
            raise ValueError(f"{path}: its SHA-256 is not the one the export recorded: the "
                             "file was replaced or damaged after export, so codes made from "
                             "it may not be of the exported images; export again")


def read_manifest(export_dir) -> dict:
    """The export's manifest, its types checked (a file from a user is data)."""
    path = pathlib.Path(export_dir) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"--export: expected a directory written by `python -m "
                                f"benchmark.audit export`, found no {path}")
    try:
        manifest = json.loads(path.read_text())
        arms = manifest["arms"]
        ok = (isinstance(arms, dict) and arms and isinstance(manifest["seeds"], list)
              and all(isinstance(s, int) for s in manifest["seeds"])
              and isinstance(manifest["reference"], str)
              and all(isinstance(a.get("images"), int) for a in arms.values()))
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{path}: expected the export's manifest, found unreadable content "
                         f"({error})") from None
    if not ok:
        raise ValueError(f"{path}: expected 'reference', integer 'seeds' and 'arms' with "
                         "their image counts")
    seeds = manifest["seeds"]
    if not seeds or len(set(seeds)) != len(seeds) or not all(0 <= s < 2**32 for s in seeds):
        raise ValueError(f"{path}: expected 'seeds' as distinct seeds in [0, 2**32), at "
                         f"least one, found {str(seeds)[:80]}")
    return manifest


def read_codes(path: pathlib.Path, rows: int) -> np.ndarray:
    """A codes file: one real array 'codes' (rows, d), finite, within the metrics' size
    limit (codes_lib.check_code_array); ValueError naming the file otherwise."""
    codes = codes_lib.read_npz(path, ("codes",), "the export's manifest says how")["codes"]
    if codes.ndim != 2 or codes.shape[0] != rows or codes.shape[1] < 1:
        raise ValueError(f"{path}: expected codes of shape ({rows}, d), one row per image of "
                         f"the arm's file, found {codes.shape}")
    try:
        return codes_lib.check_code_array(codes, 2, str(path))
    except codes_lib.MetricInputError as error:
        raise ValueError(f"{error} (expected real numbers: float or integer)") from None


def _lookup(data, codes: np.ndarray):
    """A representation function (images -> codes) that finds each image's row of `codes`
    by its exported pixels; every image of `data` is in it."""
    binary = _binary(data)
    bank = {}
    for start in range(0, data.num_images, 1024):
        indices = np.arange(start, min(start + 1024, data.num_images))
        for i, pixels in zip(indices, _pixels(data.images(indices), binary)):
            bank.setdefault(_digest(pixels), i)

    def representation(images: np.ndarray) -> np.ndarray:
        rows = []
        for pixels in _pixels(np.asarray(images), binary):
            row = bank.get(_digest(pixels))
            if row is None:
                raise ValueError("an evaluation image is not among the arm's exported images")
            rows.append(row)
        return codes[np.asarray(rows, dtype=np.int64)]
    return representation


def spec_seed(spec) -> int:
    """The seed of an arm's run spec (its run.seed binding)."""
    for binding in spec.bindings:
        key, _, value = binding.partition("=")
        if key.strip() == "run.seed":
            return int(value)
    raise ValueError(f"{spec.name}: expected a run.seed binding, found none")


def scored_identity(codes_path: pathlib.Path, spec) -> dict:
    """What a scored run's numbers rest on: the SHA-256 of its codes file and of its run's
    bindings (data, metrics, seed). A run scored with both the same, whose evaluation codes
    (eval_codes.npz, which the verdict's turn is measured on and git does not keep) are
    still there, is not scored again."""
    bindings = "\n".join(spec.bindings).encode()
    return {"codes_sha256": hashlib.sha256(codes_path.read_bytes()).hexdigest(),
            "bindings_sha256": hashlib.sha256(bindings).hexdigest()}


def _scored(run_dir: pathlib.Path, identity: dict) -> bool:
    if not (run_dir / "eval_codes.npz").is_file():
        return False
    try:
        settings = json.loads((run_dir / "results.json").read_text()).get("settings") or {}
    except (OSError, ValueError, AttributeError):
        return False
    return all(settings.get(k) == v for k, v in identity.items())


def score(export_dir, name: str, output_dir, settings_of, decide, announce=print
          ) -> pathlib.Path:
    """Checks and scores every codes file of an export, then writes the audit (module
    docstring); returns audit.md. settings_of(reference_dir, seeds, strengths) -> (the
    reference's settings, the audit's with the PLACEHOLDER_GIN method); decide(name, seeds,
    reference, reference_dir, settings, output_dir) -> audit.md:
    benchmark.studies.audit_report.write_audit."""
    export_dir = pathlib.Path(export_dir)
    manifest = read_manifest(export_dir)
    seeds = manifest["seeds"]
    reference_dir = manifest["reference"]      # absolute; shown relative to here when inside
    if pathlib.Path(reference_dir).is_relative_to(pathlib.Path.cwd()):
        reference_dir = str(pathlib.Path(reference_dir).relative_to(pathlib.Path.cwd()))
    reference, settings = settings_of(reference_dir, seeds, manifest.get("strengths"))
    arms = arm_specs(settings)
    expected = {label: variant for label, variant, _ in arms}
    found = {label: arm.get("variant") for label, arm in manifest["arms"].items()}
    if found != expected:
        raise ValueError(f"{export_dir / MANIFEST}: expected the arms of the reference "
                         f"{manifest['reference']} ({expected}), found {found}")
    missing = [f"codes/{label}/seed{s}.npz" for label in expected for s in seeds
               if not (export_dir / "codes" / label / f"seed{s}.npz").is_file()]
    if missing:
        raise FileNotFoundError(f"{export_dir}: expected a codes file per arm and seed, "
                                f"missing {len(missing)}: {', '.join(missing[:6])}"
                                + (" ..." if len(missing) > 6 else ""))
    _check_arm_files(export_dir, manifest)
    codes = {(label, s): read_codes(export_dir / "codes" / label / f"seed{s}.npz",
                                    manifest["arms"][label]["images"])
             for label in expected for s in seeds}                 # every file checked first
    out = pathlib.Path(output_dir)
    wanted = {spec.name.replace("external_", f"{name}_", 1) for _, _, specs in arms
              for spec in specs}
    stale = sorted(p.parent.name for p in (out / "runs").glob("*/results.json")
                   if p.parent.name not in wanted)
    if stale:
        raise ValueError(f"--output_dir {out} holds runs this export does not have ({stale[0]}"
                         f"{' ...' if len(stale) > 1 else ''}): an earlier audit's; give this "
                         "one a directory of its own")
    # TensorFlow's import (~4 s) only once every file has been checked
    from benchmark.runs import results as results_lib
    from benchmark.runs.run import evaluate_representation
    for label, _, specs in arms:            # the images are the exported ones, every arm
        data, _ = _load(specs[0])
        entry = manifest["arms"][label]
        if (entry["images"] != data.num_images
                or entry.get("pixels_digest") != _arm_digest(data)):
            raise ValueError(
                f"{export_dir / MANIFEST}: arm {label}'s images are not the ones the "
                f"reference makes now ({entry['images']} exported, {data.num_images} now, or "
                "other pixels: the reference's data or artefact changed); export again and "
                "encode the new files")
    trained = [p.parent for p in (out / "runs").glob("*/fingerprint.json")]
    if trained:
        raise ValueError(f"--output_dir {out} holds runs the audit trained ({trained[0].name}"
                         f"{' ...' if len(trained) > 1 else ''}); give scored codes a "
                         "directory of their own")
    with directory_lock(out, "benchmark.audit score"):
        announce(f"scoring {len(codes)} codes files ({len(expected)} arms × {len(seeds)} seeds)")
        kept = 0
        for label, variant, specs in arms:
            for spec in specs:
                run_dir = out / "runs" / spec.name.replace("external_", f"{name}_", 1)
                path = export_dir / "codes" / label / f"seed{spec_seed(spec)}.npz"
                identity = scored_identity(path, spec)
                if _scored(run_dir, identity):
                    kept += 1
                    continue
                data, run_settings = _load(spec)
                seed = run_settings.seed
                run_dir.mkdir(parents=True, exist_ok=True)
                scores, metric_settings, _ = evaluate_representation(
                    data, _lookup(data, codes[(label, seed)]), run_settings, False,
                    run_dir / "eval_codes.npz")
                results_lib.write(
                    run_dir, model=name, seed=seed, dataset=data.describe(), scores=scores,
                    final_losses={}, gin_config="\n".join(
                        b for b in spec.bindings if not b.startswith("model.")),
                    metric_settings=metric_settings,
                    settings={"external_codes": str(path), **identity})
        if kept:
            announce(f"{kept} run(s) already scored from the same codes and settings: kept")
        gin.clear_config()
        audit_settings = dataclasses.replace(settings, name=f"audit_{name}",
                                             output_dir=str(out),
                                             models={name: "external codes"})
        return decide(name, seeds, reference, reference_dir, audit_settings, out)
