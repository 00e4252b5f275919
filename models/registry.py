"""Builds a model by method name: the gin entry point of models/.

    model.method = 'beta_vae'   # see METHODS (ae, beta_vae, ..., pcl, qlae, vq_vae)
    model.num_latents = 5
    model.architecture = 'conv'      # conv | mlp | stylegan (paper 001 C.3)
    beta_vae.beta = 8.0              # each method's hyperparameters live in its own scope

A new method plugs in without touching this file, from a gin file that imports its module
(`import my_package.my_method` at the top of the gin file):
    model.method = 'vae'                        # the shared VAE with your regulariser
    model.regularizer = @my_regularizer()       # returns fn(kl, mean, logvar, z, step) -> dict
or
    model.method = 'custom'                     # your own TrainableModel
    model.factory = @MyModel                    # MyModel(observation_shape, num_latents)
"""

from __future__ import annotations

import gin

from models import (architectures, cliff, factorqvae, factorvae, interface, pcl, quantized,
                    slowvae, tripod, vae)

_REGULARIZERS = {"ae": vae.ae, "beta_vae": vae.beta_vae, "annealed_vae": vae.annealed_vae,
                 "beta_tcvae": vae.beta_tcvae, "dip_vae": vae.dip_vae,
                 "cliff_vae": cliff.cliff_vae, "cliff_ae": cliff.cliff_ae,
                 "hfs_vae": cliff.hfs_vae, "bio_ae": vae.bio_ae}
#: regularised autoencoders: mean-only encoder, the mean is decoded, no KL
_DETERMINISTIC = ("ae", "cliff_ae", "bio_ae")
_ARCHITECTURES = {"conv": (architectures.conv_encoder, architectures.conv_decoder),
                  "mlp": (architectures.mlp_encoder, architectures.mlp_decoder),
                  "stylegan": (architectures.stylegan_encoder, architectures.stylegan_decoder)}
METHODS = tuple(_REGULARIZERS) + ("factor_vae", "slowvae", "pcl", "qlae", "qlvae", "vq_vae",
                                   "tripod") + tuple(factorqvae.VARIANTS)
PLUGIN_METHODS = ("vae", "custom")
@gin.configurable("model", denylist=["observation_shape"])
def make_model(observation_shape, method: str = gin.REQUIRED, num_latents: int = 10,
               architecture: str = "conv", regularizer=None, factory=None,
               name: str | None = None):
    """The model of `method` for images of `observation_shape` (64, 64, c), checked against
    models/interface.py on two blank images before it is returned (so a plug-in that lacks
    a method fails before training, not after).

    regularizer: with method 'vae', fn(kl, mean, logvar, z, step) -> {'regularizer': ...}.
    factory: with method 'custom', factory(observation_shape, num_latents) -> a model.
    name: with method 'vae', the model's name in run directories and reports (default
      'vae'); a custom model names itself (keras.Model's name argument).
    """
    if method not in METHODS + PLUGIN_METHODS:
        raise ValueError(f"unknown model.method {method!r}; expected one of "
                         f"{', '.join(METHODS + PLUGIN_METHODS)}")
    if (regularizer is not None) != (method == "vae"):
        raise ValueError("model.regularizer goes with model.method = 'vae' (and 'vae' needs "
                         f"one); found method {method!r} and regularizer {regularizer!r}")
    if (factory is not None) != (method == "custom"):
        raise ValueError("model.factory goes with model.method = 'custom' (and 'custom' needs "
                         f"one); found method {method!r} and factory {factory!r}")
    if architecture not in _ARCHITECTURES:
        raise ValueError(f"unknown model.architecture {architecture!r}; expected one of "
                         f"{', '.join(_ARCHITECTURES)}")
    if int(num_latents) < 1:
        raise ValueError(f"model.num_latents must be >= 1, found {num_latents}")
    origin = f"model.factory {factory!r}" if method == "custom" else f"model.method {method!r}"
    return interface.check_model(
        _build(observation_shape, method, int(num_latents), architecture, regularizer,
               factory, name), observation_shape, origin)


def _build(observation_shape, method, num_latents, architecture, regularizer, factory, name):
    if method == "custom":
        if not callable(factory):
            raise TypeError(f"model.factory must be callable (observation_shape, num_latents) "
                            f"-> model; found {factory!r}")
        return factory(tuple(observation_shape), num_latents)
    make_encoder, make_decoder = _ARCHITECTURES[architecture]
    if method == "vae":
        if not callable(regularizer):
            raise TypeError(f"model.regularizer must be a function (kl, mean, logvar, z, step) "
                            f"-> dict; found {regularizer!r}")
        return vae.VAE(make_encoder(tuple(observation_shape), num_latents=num_latents),
                       make_decoder(num_latents, tuple(observation_shape)), regularizer,
                       name=name or method)
    if method in factorqvae.VARIANTS:
        return factorqvae.make_discrete_vae(make_encoder, make_decoder, observation_shape,
                                            num_latents, method)
    if method == "tripod":
        return tripod.make_tripod(
            architectures.mean_only(make_encoder(tuple(observation_shape),
                                                 num_latents=num_latents), "tripod_encoder"),
            make_decoder(num_latents, tuple(observation_shape)))
    if method == "qlae":
        return quantized.make_qlae(
            architectures.mean_only(make_encoder(tuple(observation_shape),
                                                 num_latents=num_latents), "qlae_encoder"),
            make_decoder(num_latents, tuple(observation_shape)), num_latents)
    if method == "qlvae":
        return quantized.make_qlvae(make_encoder(tuple(observation_shape),
                                                 num_latents=num_latents),
                                    make_decoder(num_latents, tuple(observation_shape)),
                                    num_latents)
    if method == "vq_vae":
        sizes = quantized.vq_vae_sizes()
        width = num_latents * sizes["vector_size"]
        return quantized.make_vq_vae(
            architectures.mean_only(make_encoder(tuple(observation_shape), num_latents=width),
                                    "vq_vae_encoder"),
            make_decoder(width, tuple(observation_shape)), num_latents, **sizes)
    if method == "pcl":
        return pcl.PCL(make_encoder(tuple(observation_shape), num_latents=num_latents),
                       name=method)
    if method == "factor_vae":
        return factorvae.FactorVAE(make_encoder(tuple(observation_shape),
                                                num_latents=num_latents),
                                   make_decoder(num_latents, tuple(observation_shape)),
                                   name=method)
    if method == "slowvae":
        return slowvae.SlowVAE(make_encoder(tuple(observation_shape), num_latents=num_latents),
                               make_decoder(num_latents, tuple(observation_shape)), name=method)
    encoder = make_encoder(tuple(observation_shape), num_latents=num_latents)
    if method in _DETERMINISTIC:
        encoder = architectures.mean_only(encoder, f"{method}_encoder")
    optimizer = quantized.paper001_adamw() if method == "bio_ae" else None
    return vae.VAE(encoder, make_decoder(num_latents, tuple(observation_shape)),
                   _REGULARIZERS[method](), optimizer=optimizer,
                   sample_latents=method not in _DETERMINISTIC, per_pixel=method == "bio_ae",
                   name=method)
