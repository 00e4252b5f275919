"""Ground-truth datasets and their variants.

`load_data` is the gin entry point: it builds a dataset by name and wraps it in the
requested variant. Everything it returns is a `GroundTruthData`.
"""

from __future__ import annotations

import gin

from benchmark.data.ground_truth import GroundTruthData

DATASETS = ("dsprites", "shapes3d")
VARIANTS = ("original", "noisy", "modified", "modified_texture", "oracle", "texture", "wave",
            "wave_texture")
#: the variants that need a manipulation artefact (data.artefact)
ARTEFACT_VARIANTS = ("modified", "modified_texture")

def get_dataset(name: str, source: str = "auto", data_dir: str | None = None
                ) -> GroundTruthData:
    """The dataset `name` ('dsprites' or 'shapes3d') from `source` (auto|procedural|file)."""
    if name == "dsprites":
        from benchmark.data.dsprites import DSprites
        return DSprites(source=source, data_dir=data_dir)
    if name == "shapes3d":
        from benchmark.data.shapes3d import Shapes3D
        return Shapes3D(source=source, data_dir=data_dir)
    raise ValueError(f"unknown dataset {name!r}; expected one of {', '.join(DATASETS)}")


def make_variant(data: GroundTruthData, variant: str = "original", eps: float | None = None,
                 seed: int = 0, artefact: str | None = None) -> GroundTruthData:
    """`data` as the variant 'original' (itself), 'noisy' (paper 002 sec. 5.2; from eps and
    seed, or from a noise artefact), 'modified' (from a manipulation artefact written by
    `python -m perturbations.generate`), 'modified_texture' (that artefact's control: the
    mean pattern E_w m(w) added to every image, perturbations/artefact.py) or the positive-control arms 'oracle' / 'texture' /
    'wave' / 'wave_texture' (benchmark/data/oracle.py; eps default ORACLE_EPS). eps overrides an artefact's
    strength."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown dataset variant {variant!r}; expected one of "
                         f"{', '.join(VARIANTS)}")
    if variant == "original":
        if artefact is not None or eps is not None:
            raise ValueError("the 'original' variant takes no artefact or eps; found "
                             f"artefact={artefact!r}, eps={eps!r}")
        return data
    if variant in ("oracle", "texture", "wave", "wave_texture"):
        if artefact is not None:
            raise ValueError(f"the {variant!r} variant takes no artefact; found {artefact!r}")
        from benchmark.data.oracle import make_oracle_variant
        return make_oracle_variant(data, variant, eps)
    if artefact is None:
        if variant in ARTEFACT_VARIANTS:
            raise ValueError(f"the {variant!r} variant needs data.artefact = '<directory of "
                             "python -m perturbations.generate>'; found none")
        from benchmark.data.variants import NoisyData
        return NoisyData(data, eps=eps, seed=seed)
    # An artefact's m(w) is a network of the perturbations package, a layer above this one:
    # imported here, when an artefact is asked for, so the data layer stays importable alone.
    from perturbations.artefact import load_variant
    loaded = load_variant(data, artefact, eps, texture=variant == "modified_texture")
    if loaded.variant != variant:
        raise ValueError(f"artefact {artefact} defines the {loaded.variant!r} variant, but "
                         f"data.variant is {variant!r}")
    return loaded


@gin.configurable("data", allowlist=["name", "variant", "source", "data_dir", "eps",
                                     "noise_seed", "artefact", "fixed_factors"])
def load_data(name: str = "dsprites", variant: str = "original", source: str = "auto",
              data_dir: str | None = None, eps: float | None = None, noise_seed: int = 0,
              artefact: str | None = None, fixed_factors: dict | None = None
              ) -> GroundTruthData:
    """Dataset `name` from `source`, as `variant`; eps / noise_seed configure 'noisy',
    artefact names a perturbation artefact directory ('modified', or a noise artefact);
    fixed_factors {factor name: class} reduces the dataset to the other factors before the
    variant is applied (benchmark/data/subset.py)."""
    data = get_dataset(name, source, data_dir)
    if fixed_factors:
        from benchmark.data.subset import FactorSubset
        data = FactorSubset(data, fixed_factors)
    return make_variant(data, variant, eps=eps, seed=noise_seed, artefact=artefact)
