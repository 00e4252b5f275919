"""A study's rate against what its images can carry: the final KL over log N.

    python -m benchmark.readings rate STUDY_DIR [STUDY_DIR ...]

For each study and each method whose runs record a KL (`loss/kl` in results.json), over
its runs of the original data: the number of runs, the mean, min and max final KL (nats per
image), N (the number of distinct images: the product of the free factors' sizes in
results.json's `dataset`), log N, and the ratio KL / log N.

Why it is read: a code that carries log N nats or more can give every image a posterior
of its own that its neighbours' do not reach. The decoder is then asked about an image's
neighbourhood only within that posterior, and the stochastic reconstruction term that
pulls a VAE's axes onto the local structure (paper 002 eq. 5-8 and sec. 3.3: the noise's
reach is "a certain radius of the relevant local structure") acts within each image's
own cell, with no neighbouring image to tie the cells' axes together. Reading a ratio at or above 1 as "the code holds the images'
index, not their factors' geometry" is the suite's reading, not a paper's; on the full
dSprites (737,280 images) the β-VAE of results/references_dsprites_cpu reads 0.64.

Writes nothing; prints one table row per (study, method). ReadingError (exit status 2) when
a directory has no runs with a KL on the original data, or a run's dataset does not name its
factor sizes.
"""

from __future__ import annotations

import math
import pathlib

from benchmark.readings import ReadingError, read_json_object


def study_rates(study_dir: str | pathlib.Path) -> list[dict]:
    """[{'study', 'method', 'runs', 'kl_mean', 'kl_min', 'kl_max', 'images', 'log_images',
    'ratio'}] for each method with original-data runs recording `loss/kl` under
    STUDY_DIR/runs, sorted by method; ReadingError when there are none, when a run's dataset
    has no positive factor sizes, or when one method's runs differ in their image count."""
    study_dir = pathlib.Path(study_dir)
    by_method: dict[str, list[tuple[float, int]]] = {}
    for path in sorted(study_dir.glob("runs/*/results.json")):
        found = read_json_object(path, "a run's results.json")
        kl = found.get("scalars", {}).get("loss/kl")
        if kl is None or found.get("hyperparameters", {}).get("data.variant") != "original":
            continue
        sizes = found.get("dataset", {}).get("factor_sizes")
        if (not isinstance(sizes, list) or not sizes
                or not all(isinstance(s, int) and s > 0 for s in sizes)):
            raise ReadingError(f"{path}: expected dataset.factor_sizes, a list of positive "
                               f"integers, found {sizes!r}")
        by_method.setdefault(str(found.get("model")), []).append((float(kl), math.prod(sizes)))
    if not by_method:
        raise ReadingError(f"{study_dir}: expected runs/*/results.json of the original data "
                           "with a KL (loss/kl), found none")
    rows = []
    for method, runs in sorted(by_method.items()):
        images = {n for _, n in runs}
        if len(images) != 1:
            raise ReadingError(f"{study_dir}: {method}'s original runs differ in their number "
                               f"of images ({sorted(images)}); expected one dataset")
        n = images.pop()
        kls = [kl for kl, _ in runs]
        mean = sum(kls) / len(kls)
        rows.append({"study": study_dir.name, "method": method, "runs": len(kls),
                     "kl_mean": mean, "kl_min": min(kls), "kl_max": max(kls), "images": n,
                     "log_images": math.log(n),
                     "ratio": mean / math.log(n) if n > 1 else math.inf})
    return rows


def table(rows: list[dict]) -> str:
    """The rows as a markdown table."""
    lines = ["| study | method | runs | KL (nats), mean [min, max] | images N | log N | "
             "KL / log N |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['study']} | {r['method']} | {r['runs']} | {r['kl_mean']:.2f} "
                     f"[{r['kl_min']:.2f}, {r['kl_max']:.2f}] | {r['images']:,} | "
                     f"{r['log_images']:.2f} | {r['ratio']:.2f} |")
    return "\n".join(lines)


def main(args: list[str]) -> None:
    if not args:
        raise ReadingError("usage: python -m benchmark.readings rate STUDY_DIR [STUDY_DIR ...]; "
                           "expected at least one study directory, found none")
    rows = [row for study in args for row in study_rates(study)]
    print(table(rows))
