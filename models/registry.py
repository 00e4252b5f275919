"""Every method of the suite, one entry each, and `make_model`, a lookup in that table.

`MODELS[method]` is a `ModelSpec`: how to build the model, the batches it trains on, which
optimisers it has, its settings (their defaults are its constructor's) and its source.
Nothing here reads gin: settings and optimiser settings arrive as arguments, e.g.

    make_model((64, 64, 1), "beta_vae", num_latents=5,
               settings={"beta_vae": {"beta": 8.0}, "adam": {"learning_rate": 1e-3}})

The commands configure the same from gin (models/configurables.py registers every entry's
settings under its scope and every optimiser under its name):

    model.method = 'beta_vae'        # a key of MODELS
    model.num_latents = 5
    model.architecture = 'conv'      # conv | mlp | stylegan (paper 001 C.3)
    beta_vae.beta = 8.0              # each method's settings live in its own scope
    adam.learning_rate = 1e-3        # each optimiser's under its name (models/optimizers.py)

**Add a method**: write its model (or its VAE regulariser) in its own module, then add one
entry to MODELS below; its gin scope, settings and defaults follow from the entry. A method
of your own plugs in without touching this file, from a gin file that imports its module
(`import my_package.my_method` at the top of the gin file):
    model.method = 'vae'                        # the shared VAE with your regulariser
    model.regularizer = @my_regularizer()       # returns fn(kl, mean, logvar, z, step) -> dict
or
    model.method = 'custom'                     # your own TrainableModel
    model.factory = @MyModel                    # MyModel(observation_shape, num_latents)
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any, Callable, Mapping

from benchmark.core.errors import ConfigError
from models import (architectures, cliff, factorqvae, factorvae, interface, pcl, quantized,
                    slowvae, tripod, vae)
from models.optimizers import OPTIMIZERS


@dataclasses.dataclass(frozen=True)
class Settings:
    """The user settings of a part (a method, an encoder or decoder, an optimiser): the
    keyword parameters `only` of `fn` (None: all its parameters), with `fn`'s defaults."""
    fn: Callable
    only: tuple | None = None

    @property
    def names(self) -> tuple:
        if self.only is not None:
            return tuple(self.only)
        return tuple(name for name, p in inspect.signature(self.fn).parameters.items()
                     if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))

    @property
    def defaults(self) -> dict:
        parameters = inspect.signature(self.fn).parameters
        return {name: parameters[name].default for name in self.names
                if parameters[name].default is not inspect.Parameter.empty}

    def resolve(self, scope: str, given: Mapping) -> dict:
        """{setting: value}: the defaults, overridden by `given`; ValueError naming a setting
        `fn` does not have."""
        unknown = sorted(set(given) - set(self.names))
        if unknown:
            raise ConfigError(f"{scope} has no setting {', '.join(unknown)}; its settings are "
                             f"{', '.join(self.names) or 'none'}")
        return {**self.defaults, **given}


@dataclasses.dataclass(frozen=True)
class Parts:
    """What a build function receives besides settings and optimisers.

    make_encoder(observation_shape, num_latents=width) -> images (n, h, w, c) in [0, 1] ->
      {'mean', 'logvar'} (n, width); make_decoder(width, observation_shape) -> z (n, width)
      -> pixel logits (n, h, w, c): the chosen architecture with its settings applied.
    plugin: the regulariser ('vae') or model factory ('custom') the user gave.
    name: the model's name (the method's, or model.name for 'vae')."""
    method: str
    observation_shape: tuple
    num_latents: int
    make_encoder: Callable
    make_decoder: Callable
    plugin: Any = None
    name: str = ""

    def encoder(self, width: int | None = None, mean_only: bool = False):
        """The encoder with `width` (default num_latents) latents; `mean_only` drops its
        log-variance head (deterministic codes), naming it '<method>_encoder'."""
        encoder = self.make_encoder(self.observation_shape,
                                    num_latents=width or self.num_latents)
        return architectures.mean_only(encoder, f"{self.method}_encoder") if mean_only \
            else encoder

    def decoder(self, width: int | None = None):
        return self.make_decoder(width or self.num_latents, self.observation_shape)


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """One method.

    build: build(parts, settings, optimizers) -> the model, with `settings` this entry's
      settings resolved (defaults overridden by the user's) and `optimizers` {role:
      optimiser} built from `optimizers`.
    settings: the method's settings (None: it has none), under the gin scope `scope`
      (None: the method's name; the FactorQVAE family shares 'discrete_vae').
    optimizers: {role: name in models.optimizers.OPTIMIZERS}; 'model' is the model's own.
      Empty where the model's optimisers follow from its settings (the FactorQVAE family's
      learning-rate schedule) or its own code (a custom model).
    input_kind: the batches it trains on, 'images', 'pairs' (x_t, x_t+1) or
      'pairs_with_negatives' (x_t, x_t+1, x_random); None: the model says (custom).
    plugin: the make_model argument the method needs ('regularizer' / 'factory'); None for
      the suite's own methods.
    paper: where the method and its default settings come from.
    variational: whether its encoder gives a posterior variance per latent (a VAE's
      Gaussian posterior), so that its health reports active units; None: the model says
      (custom).
    """
    build: Callable
    settings: Settings | None = None
    scope: str | None = None
    optimizers: Mapping = dataclasses.field(default_factory=lambda: {"model": "adam"})
    input_kind: str | None = "images"
    plugin: str | None = None
    paper: str = ""
    variational: bool | None = False


def _vae(regularizer: Callable, deterministic: bool = False, per_pixel: bool = False):
    """The build of a regulariser of the shared VAE (models/vae.py); `deterministic`: a
    mean-only encoder whose mean is decoded, no KL (AE-like); `per_pixel`: the objective's
    reconstruction averaged over pixels (paper 001's scale)."""
    def build(parts, settings, optimizers):
        return vae.VAE(parts.encoder(mean_only=deterministic), parts.decoder(),
                       regularizer(**settings), optimizer=optimizers["model"],
                       sample_latents=not deterministic, per_pixel=per_pixel,
                       name=parts.name)
    return build


def _plugin_vae(parts, settings, optimizers):
    if not callable(parts.plugin):
        raise TypeError(f"model.regularizer must be a function (kl, mean, logvar, z, step) "
                        f"-> dict; found {parts.plugin!r}")
    return vae.VAE(parts.encoder(), parts.decoder(), parts.plugin,
                   optimizer=optimizers["model"], name=parts.name)


def _custom(parts, settings, optimizers):
    if not callable(parts.plugin):
        raise TypeError(f"model.factory must be callable (observation_shape, num_latents) "
                        f"-> model; found {parts.plugin!r}")
    return parts.plugin(parts.observation_shape, parts.num_latents)


def _factor_vae(parts, settings, optimizers):
    return factorvae.FactorVAE(parts.encoder(), parts.decoder(), **settings,
                               optimizer=optimizers["model"],
                               discriminator_optimizer=optimizers["discriminator"],
                               name=parts.method)


def _slowvae(parts, settings, optimizers):
    return slowvae.SlowVAE(parts.encoder(), parts.decoder(), **settings,
                           optimizer=optimizers["model"], name=parts.method)


def _pcl(parts, settings, optimizers):
    return pcl.PCL(parts.encoder(), optimizer=optimizers["model"], name=parts.method,
                   **settings)


def _qlae(parts, settings, optimizers):
    return quantized.make_qlae(parts.encoder(mean_only=True), parts.decoder(),
                               parts.num_latents, **settings, optimizer=optimizers["model"])


def _qlvae(parts, settings, optimizers):
    return quantized.make_qlvae(parts.encoder(), parts.decoder(), parts.num_latents,
                                **settings, optimizer=optimizers["model"])


def _vq_vae(parts, settings, optimizers):
    width = parts.num_latents * int(settings["vector_size"])
    return quantized.make_vq_vae(parts.encoder(width, mean_only=True), parts.decoder(width),
                                 parts.num_latents, **settings,
                                 optimizer=optimizers["model"])


def _tripod(parts, settings, optimizers):
    return tripod.make_tripod(parts.encoder(mean_only=True), parts.decoder(), **settings,
                              optimizer=optimizers["model"])


def _discrete_vae(parts, settings, optimizers):
    return factorqvae.make_discrete_vae(parts.make_encoder, parts.make_decoder,
                                        parts.observation_shape, parts.num_latents,
                                        parts.method, **settings)


_DISCRETE_VAE = Settings(factorqvae.make_discrete_vae,
                         ("codebook_size", "beta", "gamma", "total_steps", "tau_start",
                          "tau_end", "tau_schedule", "learning_rate", "lr_decay_steps",
                          "lr_end"))

#: every method by its `model.method` name; the plug-ins ('vae', 'custom') last
MODELS: dict[str, ModelSpec] = {
    "ae": ModelSpec(_vae(vae.ae, deterministic=True), Settings(vae.ae),
                    paper="autoencoder baseline, paper 002 Table 2"),
    "beta_vae": ModelSpec(_vae(vae.beta_vae), Settings(vae.beta_vae), variational=True,
                          paper="Higgins et al. 2017; paper 002 Table 2"),
    "annealed_vae": ModelSpec(_vae(vae.annealed_vae), Settings(vae.annealed_vae), variational=True,
                              paper="Burgess et al. 2018; disentanglement_lib"),
    "beta_tcvae": ModelSpec(_vae(vae.beta_tcvae), Settings(vae.beta_tcvae), variational=True,
                            paper="Chen et al. 2018; paper 002 Table 2"),
    "dip_vae": ModelSpec(_vae(vae.dip_vae), Settings(vae.dip_vae), variational=True,
                         paper="Kumar et al. 2018; disentanglement_lib"),
    "cliff_vae": ModelSpec(_vae(cliff.cliff_vae), Settings(cliff.cliff_vae), variational=True,
                           paper="paper 004 eq. 9, appendix F.4"),
    "cliff_ae": ModelSpec(_vae(cliff.cliff_ae, deterministic=True), Settings(cliff.cliff_ae),
                          paper="paper 004 eq. 17, appendix F.4"),
    "hfs_vae": ModelSpec(_vae(cliff.hfs_vae), Settings(cliff.hfs_vae), variational=True,
                         paper="Roth et al. 2023; paper 004 appendix F.4"),
    "bio_ae": ModelSpec(_vae(vae.bio_ae, deterministic=True, per_pixel=True),
                        Settings(vae.bio_ae), optimizers={"model": "adamw"},
                        paper="Whittington et al. 2023; paper 001's baseline, Tables 9, 11"),
    "factor_vae": ModelSpec(_factor_vae,
                            Settings(factorvae.FactorVAE, ("gamma", "discriminator_units")),
                            optimizers={"model": "adam",
                                        "discriminator": "factor_vae_discriminator_adam"},
                            variational=True,
                            paper="Kim & Mnih 2018; paper 002 Table 2"),
    "slowvae": ModelSpec(_slowvae, Settings(slowvae.SlowVAE, ("beta", "gamma", "rate")),
                         input_kind="pairs", variational=True,
                         paper="Klindt et al. 2021; paper 002 Table 2"),
    "pcl": ModelSpec(_pcl, Settings(pcl.PCL, ("batch_norm", "official_init")), input_kind="pairs_with_negatives",
                     paper="Hyvarinen & Morioka 2017; paper 002 sec. 5.1"),
    "qlae": ModelSpec(_qlae, Settings(quantized.make_qlae, ("num_values", "shared_codebook",
                                                            "lambda_quantize", "lambda_commit")),
                      optimizers={"model": "adamw"}, paper="paper 001 Tables 2, 8, 9"),
    "qlvae": ModelSpec(_qlvae, Settings(quantized.make_qlvae, ("num_values", "lambda_quantize",
                                                               "lambda_commit", "lambda_kl")),
                       optimizers={"model": "adamw"}, variational=True,
                       paper="variational QLAE: paper 001's QLAE settings, suite defaults"),
    "vq_vae": ModelSpec(_vq_vae, Settings(quantized.make_vq_vae,
                                          ("vector_size", "codebook_size", "lambda_quantize",
                                           "lambda_commit")),
                        optimizers={"model": "adamw"},
                        paper="van den Oord et al. 2017; paper 001's baseline"),
    "tripod": ModelSpec(_tripod, Settings(tripod.make_tripod,
                                          ("lambda_klm", "lambda_nhp", "num_levels", "naive",
                                           "nhp_layer", "num_probes", "epsilon")),
                        optimizers={"model": "tripod_adamw"},
                        paper="paper 000 Algorithm 1, Tables 1 and 4"),
    **{variant: ModelSpec(_discrete_vae, _DISCRETE_VAE, scope="discrete_vae", optimizers={},
                          paper="paper 003 Table 3, appendix A.1")
       for variant in factorqvae.VARIANTS},
    "vae": ModelSpec(_plugin_vae, plugin="regularizer", variational=True,
                     paper="your regulariser of the shared VAE (examples/sparse_vae.py)"),
    "custom": ModelSpec(_custom, optimizers={}, input_kind=None, plugin="factory",
                        variational=None,
                        paper="your own model (examples/wae_mmd.py)"),
}

METHODS = tuple(m for m, spec in MODELS.items() if spec.plugin is None)
PLUGIN_METHODS = tuple(m for m, spec in MODELS.items() if spec.plugin is not None)


@dataclasses.dataclass(frozen=True)
class Architecture:
    """An encoder and a decoder, each with its settings (gin scope: the function's name)."""
    encoder: Settings
    decoder: Settings


#: `model.architecture` values
ARCHITECTURES = {
    "conv": Architecture(Settings(architectures.conv_encoder, ("num_latents",)),
                         Settings(architectures.conv_decoder, ())),
    "mlp": Architecture(Settings(architectures.mlp_encoder, ("hidden",)),
                        Settings(architectures.mlp_decoder, ("hidden",))),
    "stylegan": Architecture(Settings(architectures.stylegan_encoder, ("widths",)),
                             Settings(architectures.stylegan_decoder, ("widths",))),
}


def scope(method: str) -> str:
    """The name the settings of `method` go by (`beta_vae`, `discrete_vae`)."""
    return MODELS[method].scope or method


def _configurables() -> dict[str, Settings]:
    found = {}
    for method, spec in MODELS.items():
        if spec.settings is not None:
            if found.setdefault(scope(method), spec.settings) != spec.settings:
                raise ValueError(f"scope {scope(method)!r} names two different settings")
    for architecture in ARCHITECTURES.values():
        for part in (architecture.encoder, architecture.decoder):
            found[part.fn.__name__] = part
    found.update({name: Settings(fn) for name, fn in OPTIMIZERS.items()})
    return found


#: every part with settings by the name its settings go by: each method's scope, each
#: encoder and decoder, each optimiser (what `make_model(settings=...)` takes, and what the
#: gin layer registers)
CONFIGURABLES: dict[str, Settings] = _configurables()


def resolve_settings(method: str, architecture: str = "conv",
                     settings: Mapping[str, Mapping] | None = None) -> dict[str, dict]:
    """{name: resolved settings} of every part `method` on `architecture` uses (its scope,
    encoder, decoder, optimisers), from `settings` {name: {setting: value}} over the
    defaults. ValueError for a name or setting that does not exist (even one this method
    does not use), before anything is built."""
    settings = dict(settings or {})
    unknown = sorted(set(settings) - set(CONFIGURABLES))
    if unknown:
        raise ConfigError(f"unknown settings {', '.join(map(repr, unknown))}; expected names "
                         f"from {', '.join(CONFIGURABLES)}")
    checked = {name: CONFIGURABLES[name].resolve(name, given)
               for name, given in settings.items()}
    spec, parts = MODELS[method], ARCHITECTURES[architecture]
    used = [part.fn.__name__ for part in (parts.encoder, parts.decoder)]
    used += list(spec.optimizers.values())
    if spec.settings is not None:
        used.append(scope(method))
    return {name: checked.get(name) or CONFIGURABLES[name].defaults for name in used}


def make_model(observation_shape, method: str, num_latents: int = 10,
               architecture: str = "conv", regularizer=None, factory=None,
               name: str | None = None, settings: Mapping[str, Mapping] | None = None):
    """The model of `method` (a key of MODELS) for images of `observation_shape`
    (64, 64, c), checked against models/interface.py on two blank images before it is
    returned (so a plug-in that lacks a method fails before training, not after).

    regularizer: with method 'vae', fn(kl, mean, logvar, z, step) -> {'regularizer': ...}.
    factory: with method 'custom', factory(observation_shape, num_latents) -> a model.
    name: with method 'vae', the model's name in run directories and reports (default
      'vae'); a custom model names itself (keras.Model's name argument).
    settings: {name in CONFIGURABLES: {setting: value}}: the method's settings under its
      scope, the encoder's / decoder's, each optimiser's; defaults where not given.
    """
    if method not in MODELS:
        raise ConfigError(f"unknown model.method {method!r}; expected one of "
                         f"{', '.join(MODELS)}")
    spec = MODELS[method]
    for argument, value in (("regularizer", regularizer), ("factory", factory)):
        if (value is not None) != (spec.plugin == argument):
            owner = next(m for m, s in MODELS.items() if s.plugin == argument)
            raise ConfigError(f"model.{argument} goes with model.method = {owner!r} (and "
                             f"{owner!r} needs one); found method {method!r} and {argument} "
                             f"{value!r}")
    if architecture not in ARCHITECTURES:
        raise ConfigError(f"unknown model.architecture {architecture!r}; expected one of "
                         f"{', '.join(ARCHITECTURES)}")
    if int(num_latents) < 1:
        raise ConfigError(f"model.num_latents must be >= 1, found {num_latents}")
    resolved = resolve_settings(method, architecture, settings)
    encoder, decoder = ARCHITECTURES[architecture].encoder, ARCHITECTURES[architecture].decoder
    parts = Parts(method, tuple(observation_shape), int(num_latents),
                  functools.partial(encoder.fn, **resolved[encoder.fn.__name__]),
                  functools.partial(decoder.fn, **resolved[decoder.fn.__name__]),
                  plugin=regularizer if spec.plugin == "regularizer" else factory,
                  name=name or method)
    optimizers = {role: OPTIMIZERS[optimizer](**resolved[optimizer])
                  for role, optimizer in spec.optimizers.items()}
    model = spec.build(parts, resolved.get(scope(method), {}), optimizers)
    if spec.input_kind is not None and getattr(model, "input_kind", "images") != spec.input_kind:
        raise TypeError(f"models.registry: {method!r} is registered with input_kind "
                        f"{spec.input_kind!r}, its model has {model.input_kind!r}")
    origin = f"model.factory {factory!r}" if method == "custom" else f"model.method {method!r}"
    return interface.check_model(model, observation_shape, origin)
