"""Quantised-latent autoencoders: QLAE and VQ-VAE (paper 001), one model, the quantiser
plugged in (models/quantizers.py).

loss = BCE + lambda_quantize * L_quantize + lambda_commit * L_commit
(paper 001 Algorithm 2) at the paper code's scale: BCE averaged over pixels, the codebook
losses over dims (the logged 'reconstruction' stays the suite's per-image sum, comparable
across methods). Trained with AdamW (lr 1e-3, betas 0.9 / 0.99, weight decay on the
encoder and decoder weights, not on the codebook; Tables 9 and 11). The representation is
the quantised code for QLAE (scalar values, so traversals interpolate between them) and
the categorical code indices for VQ-VAE (paper 001 sec. 5: "we use the categorical codes
for evaluation").

QLVAE is the variational QLAE: the encoder's Gaussian posterior N(mean, exp(logvar)) is
sampled (reparameterised) before quantisation and lambda_kl * KL(q(z|x) || N(0, I)), at
the BCE's per-pixel scale (KL summed over dims / pixels), joins the loss: lambda_kl = 1
makes the reconstruction + KL part the ELBO. None of the five source papers states its
settings (the issue names it beside QLAE); the suite keeps QLAE's and defaults to the
ELBO's weight (1e-2 per dim collapsed every posterior mean onto one code value in 2000
steps on dSprites). The representation is the quantised posterior mean.
"""

from __future__ import annotations

import tensorflow as tf

from models import losses
from models.base import TrainableModel
from models.optimizers import paper001_adamw
from models.quantizers import ScalarCodebookQuantizer, VectorQuantizer


class QuantizedAE(TrainableModel):
    """encoder (mean head) -> quantiser -> decoder; batches are images (n, 64, 64, c).
    optimizer: None is `paper001_adamw()` (its defaults); the codebook is excluded from its
    weight decay."""

    #: the representation takes finitely many values per dim (codebook values or indices):
    #: the runner scores it with discrete estimators (InfoMEC, paper 001 sec. 4.1)
    code_is_discrete = True

    def __init__(self, encoder, decoder, quantizer, lambda_quantize: float = 1e-2,
                 lambda_commit: float = 1e-2, categorical_codes: bool = False,
                 reconstruction_loss=losses.bernoulli_reconstruction, optimizer=None,
                 lambda_kl: float = 0.0, **kwargs):
        optimizer = optimizer or paper001_adamw()
        super().__init__(optimizer, **kwargs)
        self.encoder, self.decoder, self.quantizer = encoder, decoder, quantizer
        self.lambda_quantize, self.lambda_commit = float(lambda_quantize), float(lambda_commit)
        self.categorical_codes = categorical_codes
        self.lambda_kl = float(lambda_kl)
        self.reconstruction_loss = reconstruction_loss
        optimizer.exclude_from_weight_decay(var_list=quantizer.trainable_variables)

    def encode(self, images, training: bool = False) -> dict:
        """{'mean': continuous (n, d), 'codes': quantised (n, d)} (+ 'logvar' for QLVAE)."""
        posterior = self.encoder(images, training=training)
        quantised, _ = self.quantizer(posterior["mean"])
        encoded = {"mean": posterior["mean"], "codes": quantised}
        if self.lambda_kl:
            encoded["logvar"] = posterior["logvar"]
        return encoded

    def decode(self, codes, training: bool = False):
        return self.decoder(codes, training=training)

    def representation(self, images):
        """Quantised code (n, n_z) (QLAE) or codebook indices (n, n_z) (VQ-VAE)."""
        continuous = self.encoder(images)["mean"]
        if self.categorical_codes:
            return tf.cast(self.quantizer.indices(continuous), tf.float32)
        return self.quantizer(continuous)[0]

    def decode_images(self, codes):
        """Images in [0, 1] from representation codes; VQ-VAE indices are looked up in the
        codebook first (rounded, so traversals step from entry to entry)."""
        if self.categorical_codes:
            indices = tf.cast(tf.round(codes), tf.int32)
            size = tf.shape(self.quantizer.codebook)[0]
            vectors = tf.gather(self.quantizer.codebook, tf.clip_by_value(indices, 0, size - 1))
            codes = tf.reshape(vectors, [tf.shape(codes)[0], -1])
        return tf.sigmoid(self.decode(codes))

    def loss_terms(self, images, step, seed) -> dict:
        posterior = self.encoder(images, training=True)
        continuous = posterior["mean"]
        terms = {}
        if self.lambda_kl:
            logvar = posterior["logvar"]
            noise = tf.random.stateless_normal(tf.shape(continuous), seed)
            continuous = continuous + tf.exp(0.5 * logvar) * noise
            terms["kl"] = tf.reduce_mean(losses.gaussian_kl(posterior["mean"], logvar))
        quantised, aux = self.quantizer(continuous)
        reconstruction = tf.reduce_mean(self.reconstruction_loss(images,
                                                                 self.decode(quantised, True)))
        loss = (losses.per_pixel(reconstruction, images) + self.lambda_quantize * aux["quantize"]
                + self.lambda_commit * aux["commit"])
        if self.lambda_kl:
            loss = loss + self.lambda_kl * losses.per_pixel(terms["kl"], images)
        return {"loss": loss, "reconstruction": reconstruction, **aux, **terms}


def make_qlae(encoder, decoder, num_latents: int, num_values: int = 10,
              shared_codebook: bool = False, lambda_quantize: float = 1e-2,
              lambda_commit: float = 1e-2, optimizer=None, name: str = "qlae"
              ) -> QuantizedAE:
    """QLAE (paper 001): n_v = 10 values per dim, both loss weights 1e-2 (Table 8);
    shared_codebook = True is Table 2's ablation "w/o dimension-specific codebooks"."""
    quantizer = ScalarCodebookQuantizer(num_latents, num_values, shared=shared_codebook)
    return QuantizedAE(encoder, decoder, quantizer, lambda_quantize, lambda_commit,
                       optimizer=optimizer, name=name)


def make_qlvae(encoder, decoder, num_latents: int, num_values: int = 10,
               lambda_quantize: float = 1e-2, lambda_commit: float = 1e-2,
               lambda_kl: float = 1.0, optimizer=None) -> QuantizedAE:
    """QLVAE: QLAE's codebooks and loss weights (paper 001 Table 8) on a Gaussian encoder
    (mean and logvar heads) whose sample is quantised, plus lambda_kl * KL to N(0, I) at the
    per-pixel scale (1: the ELBO's weight)."""
    if not lambda_kl > 0:
        raise ValueError(f"qlvae.lambda_kl must be > 0 (0 is QLAE), found {lambda_kl}")
    quantizer = ScalarCodebookQuantizer(num_latents, num_values)
    return QuantizedAE(encoder, decoder, quantizer, lambda_quantize, lambda_commit,
                       optimizer=optimizer, lambda_kl=lambda_kl, name="qlvae")


def make_vq_vae(encoder, decoder, num_latents: int, vector_size: int = 64,
                codebook_size: int = 512, lambda_quantize: float = 1.0,
                lambda_commit: float = 0.25, optimizer=None, name: str = "vq_vae"
                ) -> QuantizedAE:
    """VQ-VAE baseline of paper 001 (d = 64, n_v = 512) over n_z = num_latents vectors;
    encoder and decoder use n_z * vector_size continuous dims. Loss weights of van den Oord
    et al. (quantize 1, commit 0.25), which paper 001 does not restate."""
    quantizer = VectorQuantizer(num_latents, int(vector_size), int(codebook_size))
    return QuantizedAE(encoder, decoder, quantizer, float(lambda_quantize),
                       float(lambda_commit), categorical_codes=True, optimizer=optimizer,
                       name=name)
