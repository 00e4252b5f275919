"""Ground-truth datasets and their variants.

`load_data` is the gin entry point: it builds a dataset by name and wraps it in the
requested variant. Everything it returns is a `GroundTruthData`.
"""

from __future__ import annotations

import gin

from benchmark.data.ground_truth import GroundTruthData

DATASETS = ("dsprites", "shapes3d")
VARIANTS = ("original", "noisy")


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
                 seed: int = 0) -> GroundTruthData:
    """`data` as the variant 'original' (itself) or 'noisy' (paper 002 sec. 5.2)."""
    if variant == "original":
        return data
    if variant == "noisy":
        from benchmark.data.variants import NoisyData
        return NoisyData(data, eps=eps, seed=seed)
    raise ValueError(f"unknown dataset variant {variant!r}; expected one of "
                     f"{', '.join(VARIANTS)}")


@gin.configurable("data", allowlist=["name", "variant", "source", "data_dir", "eps",
                                     "noise_seed"])
def load_data(name: str = "dsprites", variant: str = "original", source: str = "auto",
              data_dir: str | None = None, eps: float | None = None, noise_seed: int = 0
              ) -> GroundTruthData:
    """Dataset `name` from `source`, as `variant`; eps / noise_seed configure 'noisy'."""
    return make_variant(get_dataset(name, source, data_dir), variant, eps=eps, seed=noise_seed)
