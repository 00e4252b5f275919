"""The gin layer of models/: the one module of the package that imports gin.

It registers, under the names the shipped gin files use:
- `model`: `models.registry.make_model` (`model.method`, `model.num_latents`, ...);
- every part with settings, `registry.CONFIGURABLES`: each method's settings under its
  scope (`beta_vae.beta`, `discrete_vae.lr_end`), each encoder and decoder
  (`mlp_encoder.hidden`) and each optimiser of models/optimizers.py (`adam.learning_rate`,
  `adamw.weight_decay`, `factor_vae_discriminator_adam.beta_1`, `manipulation_adam.*`, `game_decoder_adam.*`).
The library constructors never read gin: `configured_model` and `configured_optimizer`
read the bindings and pass them on as arguments. A new registry entry or optimiser is
registered here by itself.
"""

from __future__ import annotations

import gin

from benchmark.core.errors import ConfigError
from models import registry
from models.optimizers import OPTIMIZERS

for _name, _settings in registry.CONFIGURABLES.items():
    gin.external_configurable(_settings.fn, _name, allowlist=None if _settings.only is None
                              else list(_settings.only))

_make_model = gin.external_configurable(registry.make_model, "model",
                                        denylist=["observation_shape", "settings"])


def bound_settings() -> dict[str, dict]:
    """{name: {setting: value}} of what gin binds for every part in registry.CONFIGURABLES
    (names gin binds nothing for map to {})."""
    return {name: gin.get_bindings(name) for name in registry.CONFIGURABLES}


def check_bound_method(method=None) -> str:
    """The method gin binds (`model.method`, or `method` when given): ConfigError, one line,
    when it is unset or not a registered method. Cheap: called before any data loads."""
    if method is None:
        method = gin.get_bindings("model", resolve_references=False).get("method")
    if method is None:
        raise ConfigError(f"model.method is not set; bind one of {', '.join(registry.MODELS)}"
                          f" (e.g. model.method = 'beta_vae')")
    if isinstance(method, str) and method not in registry.MODELS:    # (a macro: later)
        raise ConfigError(f"unknown model.method {method!r}; expected one of "
                          f"{', '.join(registry.MODELS)}")
    return method


def configured_model(observation_shape, **arguments):
    """`registry.make_model` for images of `observation_shape` (h, w, c), its arguments
    (`model.*`) and every part's settings from gin; `arguments` (method, num_latents, ...)
    override `model.*` bindings."""
    check_bound_method(arguments.get("method"))
    return _make_model(observation_shape, settings=bound_settings(), **arguments)


def configured_optimizer(name: str):
    """A new optimiser `name` (a key of models.optimizers.OPTIMIZERS) with gin's settings
    for it (`manipulation_adam.learning_rate = ...`)."""
    return OPTIMIZERS[name](**gin.get_bindings(name))
