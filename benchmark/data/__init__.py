"""Ground-truth datasets and their variants.

`load_data` is the gin entry point: it builds a dataset by name and wraps it in the
requested variant. Everything it returns is a `GroundTruthData`.
"""

from __future__ import annotations

from typing import Sequence

import gin

from benchmark.core.errors import ConfigError
from benchmark.data.ground_truth import GroundTruthData

DATASETS = ("dsprites", "shapes3d")
VARIANTS = ("original", "noisy", "modified", "modified_texture", "oracle", "texture", "wave",
            "wave_texture", "naive", "naive_swapped", "rotated", "shaded",
            "shaded_diagonal", "shaded_fixed", "vignetted")
#: the variants that need an artefact (data.artefact): a manipulation's or a naive move's
ARTEFACT_VARIANTS = ("modified", "modified_texture", "naive", "naive_swapped")

def get_dataset(name: str, source: str = "auto", data_dir: str | None = None
                ) -> GroundTruthData:
    """The dataset `name` ('dsprites' or 'shapes3d') from `source` (auto|procedural|file)."""
    if name == "dsprites":
        from benchmark.data.dsprites import DSprites
        return DSprites(source=source, data_dir=data_dir)
    if name == "shapes3d":
        from benchmark.data.shapes3d import Shapes3D
        return Shapes3D(source=source, data_dir=data_dir)
    raise ConfigError(f"unknown dataset {name!r}; expected one of {', '.join(DATASETS)}")


def data_file(name: str, source: str = "auto", data_dir: str | None = None):
    """The official file `load_data(name, source=..., data_dir=...)` would read, or None
    when it renders procedurally (the run's identity hashes that file: benchmark/
    fingerprint.py). ValueError for an unknown dataset or source."""
    if name == "dsprites":
        from benchmark.data import dsprites as module
    elif name == "shapes3d":
        from benchmark.data import shapes3d as module
    else:
        raise ConfigError(f"unknown dataset {name!r}; expected one of {', '.join(DATASETS)}")
    from benchmark.data import files
    return files.resolve_source(name, source, module.FILENAME, module.SUBDIRS, data_dir,
                                module.URL)


def make_variant(data: GroundTruthData, variant: str = "original", eps: float | None = None,
                 seed: int = 0, artefact: str | None = None, artefact_loader=None,
                 wave_direction: float | None = None,
                 wave_periods: float | None = None,
                 wave_factors: Sequence[str] | None = None) -> GroundTruthData:
    """`data` as the variant 'original' (itself), 'noisy' (paper 002 sec. 5.2; from eps and
    seed, or from a noise artefact), 'modified' (from a manipulation artefact written by
    `python -m perturbations.generate`), 'modified_texture' (that artefact's control: the
    mean pattern E_w m(w) added to every image, perturbations/artefact.py), 'naive' (paper
    002 sec. 4.4's naive move, from an artefact written by `python -m
    perturbations.naive_artefact`; 'naive_swapped' its control with the references' roles
    swapped, from `--towards=disentangled`) or the positive-control arms 'oracle' / 'texture' /
    'wave' / 'wave_texture' (benchmark/data/oracle.py; eps default ORACLE_EPS), or
    'rotated' (the sprite turned by eps orientation classes, benchmark/data/rotated.py) or
    'shaded' / 'shaded_diagonal' (a ramp of per-image brightness along posX / the diagonal,
    peak eps, benchmark/data/variants.py) or 'shaded_fixed' (the posX ramp at full
    brightness in every image) or 'vignetted' (every image times the same radial gain, 1
    at the centre and 1 - eps in the corners). eps
    overrides an artefact's strength. artefact_loader(data, directory, eps, texture=bool) -> the variant an artefact
    directory defines (perturbations.artefact.load_variant), needed when `artefact` is.
    wave_direction: the direction (degrees) in the (posX, posY) plane along which the
    'wave' arms' phase moves (benchmark/data/oracle.py; None: the diagonal); wave_periods:
    the turns of their phase over the data (None: oracle.WAVE_PERIODS); wave_factors: the
    two factors of the plane the wave's phase moves in (None: oracle.ORACLE_FACTORS, posX
    and posY). All three are refused on other variants; a study whose original arm shares
    them trains the wave arms alone."""
    if variant not in VARIANTS:
        raise ConfigError(f"unknown dataset variant {variant!r}; expected one of "
                         f"{', '.join(VARIANTS)}")
    if variant == "original":
        if artefact is not None or eps is not None:
            raise ConfigError("the 'original' variant takes no artefact or eps; found "
                             f"artefact={artefact!r}, eps={eps!r}")
        return data
    for name, value in (("wave_direction", wave_direction), ("wave_periods", wave_periods),
                        ("wave_factors", wave_factors)):
        if value is not None and variant not in ("wave", "wave_texture"):
            raise ConfigError(f"data.{name} applies to the 'wave' and 'wave_texture' "
                              f"variants, found variant {variant!r}")
    if variant in ("oracle", "texture", "wave", "wave_texture"):
        if artefact is not None:
            raise ConfigError(f"the {variant!r} variant takes no artefact; found {artefact!r}")
        from benchmark.data.oracle import make_oracle_variant
        return make_oracle_variant(data, variant, eps, wave_direction, wave_periods,
                                   wave_factors)
    if variant == "rotated":
        if artefact is not None:
            raise ConfigError(f"the 'rotated' variant takes no artefact; found {artefact!r}")
        from benchmark.data.rotated import RotatedSprites
        return RotatedSprites(data, eps)
    if variant in ("shaded", "shaded_diagonal", "shaded_fixed"):
        if artefact is not None:
            raise ConfigError(f"the 'shaded' variant takes no artefact; found {artefact!r}")
        if eps is None:
            raise ConfigError("the 'shaded' variant needs its peak brightness as data.eps "
                              "(e.g. shaded@0.45), found none")
        from benchmark.data.variants import ShadedData
        return ShadedData(data, eps=eps, seed=seed,
                          direction="diagonal" if variant == "shaded_diagonal" else "horizontal",
                          fixed=variant == "shaded_fixed")
    if variant == "vignetted":
        if artefact is not None:
            raise ConfigError(f"the 'vignetted' variant takes no artefact; found {artefact!r}")
        from benchmark.data.variants import VignettedData
        return VignettedData(data, eps=eps)
    if artefact is None:
        if variant in ARTEFACT_VARIANTS:
            command = ("perturbations.naive_artefact" if variant.startswith("naive")
                       else "perturbations.generate")
            raise ConfigError(f"the {variant!r} variant needs data.artefact = '<directory of "
                             f"python -m {command}>'; found none")
        from benchmark.data.variants import NoisyData
        return NoisyData(data, eps=eps, seed=seed)
    # An artefact's m(w) is a network of the perturbations package, a layer above this one:
    # its loader is passed in by the caller that composes the two (the runner, the data
    # command), so this layer never imports it.
    if artefact_loader is None:
        raise TypeError("make_variant: an artefact variant needs artefact_loader "
                        "(perturbations.artefact.load_variant), found none")
    loaded = artefact_loader(data, artefact, eps, texture=variant == "modified_texture")
    if loaded.variant != variant:
        raise ConfigError(f"artefact {artefact} defines the {loaded.variant!r} variant, but "
                         f"data.variant is {variant!r}")
    return loaded


@gin.configurable("data", allowlist=["name", "variant", "source", "data_dir", "eps",
                                     "noise_seed", "artefact", "fixed_factors",
                                     "factor_strides", "factor_ranges", "wave_direction",
                                     "wave_periods", "wave_factors"])
def load_data(name: str = "dsprites", variant: str = "original", source: str = "auto",
              data_dir: str | None = None, eps: float | None = None, noise_seed: int = 0,
              artefact: str | None = None, fixed_factors: dict | None = None,
              artefact_loader=None, wave_direction: float | None = None,
              wave_periods: float | None = None, wave_factors: Sequence[str] | None = None,
              factor_strides: dict | None = None,
              factor_ranges: dict | None = None) -> GroundTruthData:
    """Dataset `name` from `source`, as `variant`; eps / noise_seed configure 'noisy',
    artefact names a perturbation artefact directory ('modified', or a noise artefact);
    fixed_factors {factor name: class} reduces the dataset to the other factors before the
    variant is applied, and factor_strides {free factor name: stride} keeps every stride-th
    class of those factors and factor_ranges {free factor name: (start, stop)} keeps classes
    start..stop - 1 of them (benchmark/data/subset.py); artefact_loader: see make_variant (not
    a gin setting: the caller composes it); wave_direction, wave_periods, wave_factors: see
    make_variant."""
    data = get_dataset(name, source, data_dir)
    if fixed_factors or factor_strides or factor_ranges:
        from benchmark.data.subset import FactorSubset
        data = FactorSubset(data, fixed_factors or {}, factor_strides, factor_ranges)
    return make_variant(data, variant, eps=eps, seed=noise_seed, artefact=artefact,
                        artefact_loader=artefact_loader, wave_direction=wave_direction,
                        wave_periods=wave_periods, wave_factors=wave_factors)
