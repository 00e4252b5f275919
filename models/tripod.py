"""Tripod (paper 000): finite scalar quantisation + kernel latent multiinformation +
normalised Hessian penalty on an autoencoder (Algorithm 1), and naive Tripod and the
ablations of Table 1 as switches of the same model:

    loss = BCE(x, decoder(z)) + lambda_klm * KLM(z; sigma(c)) + lambda_nhp * NHP(h; z, sigma(c))

with the BCE averaged over pixels (the scale of the QLAE code Tripod builds on, which its
weights were tuned at; the logged 'reconstruction' is the suite's per-image sum)

with c the encoder output, z = FSQ(c) (eq. 10, n_q levels), sigma the batch std of c
(sec. 3.4), h the regularised decoder activations. Switches:
- `naive=True`: naive Tripod (sec. 4.1 and 5: "VQ-style latent quantization as in QLAE,
  fixed smoothing parameters for kernel-based latent multiinformation regularization,
  and the vanilla Hessian penalty (with activation normalization)"): QLAE's learnable
  scalar codebooks (quantize / commit losses, weights 1e-2 as in QLAE) instead of FSQ,
  KLM with unit bandwidth, and the original Hessian penalty (eq. 8, unit Rademacher
  probes, so *not* invariant to latent scale) on activations divided by their batch std
  pooled over units (so invariant to activation scale). The paper does not spell out
  the normalisation; one pooled std, held fixed in the gradient, is the suite's reading
  (per-unit stds divide by ~0 on dead ReLU units);
- `lambda_nhp = 0` (w/o NHP), `lambda_klm = 0` (w/o KLM), `num_levels = 144` (finer
  quantisation: 12 -> 12^2, Table 1).
Choice where the paper leaves the architecture open: the regularised activations are the
decoder's dense output before the first transposed convolution (4 x 4 x 64 = 1024 units
in the dlib decoder), `tripod.nhp_layer`.
Optimiser: paper 000 Table 4 (fixed for all autoencoder variants): AdamW, lr 1e-3,
beta_1 0.9, beta_2 0.99, <= 2e5 updates, batch 64. The paper gives no weight decay for
Tripod; the default 1e-4 is optax's adamw default (the authors' code is JAX), a gin
binding (`tripod_adamw.weight_decay`; `models.optimizers.tripod_adamw`).
"""

from __future__ import annotations

import keras
import tensorflow as tf

from models import losses
from models.base import TrainableModel
from models.optimizers import tripod_adamw
from models.quantizers import ScalarCodebookQuantizer, finite_scalar_quantize
from models.tripod_terms import (hessian_penalty, kernel_latent_multiinformation,
                                 normalized_hessian_penalty)


class Tripod(TrainableModel):
    """Batches are images (n, 64, 64, c); representation = the quantised latents.
    optimizer: None is `tripod_adamw()` (paper 000 Table 4)."""

    #: the representation is quantised (FSQ levels or codebook values): discrete estimators
    #: apply (InfoMEC, paper 001 sec. 4.1)
    code_is_discrete = True

    def __init__(self, encoder, decoder, lambda_klm: float = 1e-4, lambda_nhp: float = 1e-2,
                 num_levels: int = 12, naive: bool = False, nhp_layer: int = 2,
                 num_probes: int = 2, epsilon: float = 0.1, optimizer=None, **kwargs):
        super().__init__(optimizer or tripod_adamw(), **kwargs)
        self.encoder, self.decoder = encoder, decoder
        self.lambda_klm, self.lambda_nhp = float(lambda_klm), float(lambda_nhp)
        self.num_levels, self.naive = int(num_levels), bool(naive)
        self.num_probes, self.epsilon = int(num_probes), float(epsilon)
        num_latents = encoder.output["mean"].shape[-1]
        self.codebooks = ScalarCodebookQuantizer(num_latents) if naive else None
        if not 0 < int(nhp_layer) < len(decoder.layers):
            raise ValueError(f"tripod.nhp_layer must index a hidden layer of the decoder "
                             f"(1..{len(decoder.layers) - 1}), found {nhp_layer}")
        self.activations = keras.Model(decoder.input, decoder.layers[int(nhp_layer)].output,
                                       name="nhp_activations")

    def _quantize(self, continuous):
        """(z, {named codebook losses})."""
        if self.naive:
            return self.codebooks(continuous)
        return finite_scalar_quantize(continuous, self.num_levels)[0], {}

    def encode(self, images, training: bool = False) -> dict:
        continuous = self.encoder(images, training=training)["mean"]
        return {"mean": continuous, "codes": self._quantize(continuous)[0]}

    def representation(self, images):
        return self.encode(images)["codes"]

    def decode(self, codes, training: bool = False):
        return self.decoder(codes, training=training)

    def decode_images(self, codes):
        return tf.sigmoid(self.decode(codes))

    def reconstruction_loss(self, images, logits):
        return losses.bernoulli_reconstruction(images, logits)

    def loss_terms(self, images, step, seed) -> dict:
        continuous = self.encoder(images, training=True)["mean"]
        z, codebook_terms = self._quantize(continuous)
        reconstruction = tf.reduce_mean(self.reconstruction_loss(images,
                                                                 self.decode(z, True)))
        sigma = tf.stop_gradient(tf.math.reduce_std(continuous, axis=0)) + 1e-6
        terms = {"reconstruction": reconstruction}
        loss = (losses.per_pixel(reconstruction, images)
                + sum(0.01 * v for v in codebook_terms.values()))
        if self.lambda_klm > 0:
            bandwidth = tf.ones_like(sigma) if self.naive else sigma
            terms["klm"] = kernel_latent_multiinformation(z, bandwidth)
            loss += self.lambda_klm * terms["klm"]
        if self.lambda_nhp > 0:
            def activations(codes):
                # float32 for the finite differences (under mixed_bfloat16 the activations
                # themselves are bfloat16, which makes the curvature estimate coarse).
                return tf.cast(tf.reshape(self.activations(codes, training=True),
                                          [tf.shape(codes)[0], -1]), tf.float32)
            if self.naive:
                # one pooled std for the layer: per-unit stds of dead units are ~0
                scale = tf.stop_gradient(tf.sqrt(tf.reduce_mean(
                    tf.math.reduce_variance(activations(z), axis=0))) + 1e-6)
                terms["hessian_penalty"] = hessian_penalty(
                    lambda codes: activations(codes) / scale, z, seed, self.num_probes,
                    self.epsilon)
            else:
                terms["hessian_penalty"] = normalized_hessian_penalty(
                    activations, z, sigma, seed, self.num_probes, self.epsilon)
            loss += self.lambda_nhp * terms["hessian_penalty"]
        return {"loss": loss, **terms, **codebook_terms}


def make_tripod(encoder, decoder, lambda_klm: float = 1e-4, lambda_nhp: float = 1e-2,
                num_levels: int = 12, naive: bool = False, nhp_layer: int = 2,
                num_probes: int = 2, epsilon: float = 0.1, optimizer=None) -> Tripod:
    """Tripod with paper 000's settings (n_p 2, eps 0.1, 12 levels; Shapes3D weights)."""
    return Tripod(encoder, decoder, lambda_klm, lambda_nhp, num_levels, naive, nhp_layer,
                  num_probes, epsilon, optimizer=optimizer,
                  name="tripod_naive" if naive else "tripod")
