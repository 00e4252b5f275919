"""Builds a model by method name: the gin entry point of models/.

    model.method = 'beta_vae'   # ae | beta_vae | annealed_vae | beta_tcvae | dip_vae | slowvae | pcl
    model.num_latents = 5
    model.architecture = 'conv'      # conv | mlp
    beta_vae.beta = 8.0              # each method's hyperparameters live in its own scope
"""

from __future__ import annotations

import gin

from models import architectures, factorvae, pcl, slowvae, vae

_REGULARIZERS = {"ae": vae.ae, "beta_vae": vae.beta_vae, "annealed_vae": vae.annealed_vae,
                 "beta_tcvae": vae.beta_tcvae, "dip_vae": vae.dip_vae}
_ARCHITECTURES = {"conv": (architectures.conv_encoder, architectures.conv_decoder),
                  "mlp": (architectures.mlp_encoder, architectures.mlp_decoder)}
METHODS = tuple(_REGULARIZERS) + ("factor_vae", "slowvae", "pcl")


@gin.configurable("model", denylist=["observation_shape"])
def make_model(observation_shape, method: str = gin.REQUIRED, num_latents: int = 10,
               architecture: str = "conv"):
    """The model of `method` for images of `observation_shape` (64, 64, c)."""
    if method not in METHODS:
        raise ValueError(f"unknown model.method {method!r}; expected one of {', '.join(METHODS)}")
    if architecture not in _ARCHITECTURES:
        raise ValueError(f"unknown model.architecture {architecture!r}; expected 'conv' or 'mlp'")
    if int(num_latents) < 1:
        raise ValueError(f"model.num_latents must be >= 1, found {num_latents}")
    make_encoder, make_decoder = _ARCHITECTURES[architecture]
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
    return vae.VAE(make_encoder(tuple(observation_shape), num_latents=num_latents),
                   make_decoder(num_latents, tuple(observation_shape)),
                   _REGULARIZERS[method](), sample_latents=method != "ae", name=method)
