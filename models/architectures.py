"""Networks shared by every method: disentanglement_lib's conv encoder/decoder and an MLP.

dlib conv architecture (REFERENCE.md, Methods; Locatello et al. 2019): encoder 4 conv
layers (32, 32, 64, 64 filters, 4x4, stride 2, ReLU), dense 256 (ReLU), linear heads for
the mean and log-variance; the decoder mirrors it: dense 256, dense 4*4*64, 4 transposed
conv layers (64, 32, 32, channels; 4x4, stride 2), output logits (n, 64, 64, c).
Output layers compute in float32 whatever the Keras precision policy, so under
`run.precision = 'mixed_bfloat16'` the losses still see float32 tensors.
"""

from __future__ import annotations

import gin
import keras
from keras import layers


@gin.configurable("conv_encoder", allowlist=["num_latents"])
def conv_encoder(input_shape=(64, 64, 1), num_latents: int = 10, name: str = "encoder"
                 ) -> keras.Model:
    """images float32 (n, 64, 64, c) in [0, 1] -> {'mean', 'logvar'}, each (n, num_latents)."""
    images = keras.Input(shape=input_shape)
    x = images
    for filters in (32, 32, 64, 64):
        x = layers.Conv2D(filters, 4, strides=2, padding="same", activation="relu")(x)
    x = layers.Dense(256, activation="relu")(layers.Flatten()(x))
    outputs = {"mean": layers.Dense(num_latents, name="mean", dtype="float32")(x),
               "logvar": layers.Dense(num_latents, name="logvar", dtype="float32")(x)}
    return keras.Model(images, outputs, name=name)


@gin.configurable("conv_decoder", allowlist=[])
def conv_decoder(num_latents: int = 10, output_shape=(64, 64, 1), name: str = "decoder"
                 ) -> keras.Model:
    """latents (n, num_latents) -> pixel logits (n, 64, 64, c)."""
    latents = keras.Input(shape=(num_latents,))
    x = layers.Dense(256, activation="relu")(latents)
    x = layers.Dense(4 * 4 * 64, activation="relu")(x)
    x = layers.Reshape((4, 4, 64))(x)
    for filters in (64, 32, 32):
        x = layers.Conv2DTranspose(filters, 4, strides=2, padding="same", activation="relu")(x)
    logits = layers.Conv2DTranspose(output_shape[-1], 4, strides=2, padding="same",
                                    dtype="float32")(x)
    return keras.Model(latents, logits, name=name)


@gin.configurable("mlp_encoder", allowlist=["hidden"])
def mlp_encoder(input_shape=(64, 64, 1), num_latents: int = 10, hidden=(1200, 1200),
                name: str = "encoder") -> keras.Model:
    """dlib's fully connected encoder: flatten, ReLU layers `hidden`, mean/logvar heads."""
    images = keras.Input(shape=input_shape)
    x = layers.Flatten()(images)
    for units in hidden:
        x = layers.Dense(units, activation="relu")(x)
    outputs = {"mean": layers.Dense(num_latents, name="mean", dtype="float32")(x),
               "logvar": layers.Dense(num_latents, name="logvar", dtype="float32")(x)}
    return keras.Model(images, outputs, name=name)


@gin.configurable("mlp_decoder", allowlist=["hidden"])
def mlp_decoder(num_latents: int = 10, output_shape=(64, 64, 1), hidden=(1200, 1200, 1200),
                name: str = "decoder") -> keras.Model:
    """dlib's fully connected decoder (tanh hidden layers) -> pixel logits (n, 64, 64, c)."""
    latents = keras.Input(shape=(num_latents,))
    x = latents
    for units in hidden:
        x = layers.Dense(units, activation="tanh")(x)
    size = output_shape[0] * output_shape[1] * output_shape[2]
    logits = layers.Reshape(tuple(output_shape))(layers.Dense(size, dtype="float32")(x))
    return keras.Model(latents, logits, name=name)


def mean_only(encoder: keras.Model, name: str) -> keras.Model:
    """`encoder` without its log-variance head, for deterministic methods (AE, PCL): every
    remaining weight is trained, and no untrained variance is ever reported."""
    return keras.Model(encoder.input, {"mean": encoder.output["mean"]}, name=name)
