"""Networks shared by every method: disentanglement_lib's conv encoder/decoder and an MLP.

dlib conv architecture (Locatello et al. 2019; disentanglement_lib
methods/shared/architectures.py `conv_encoder`): encoder 4 conv layers (32, 32, 64, 64
filters, kernels 4, 4, 2, 2, stride 2, 'same', ReLU), dense 256 (ReLU), linear heads for
the mean and log-variance; the decoder mirrors it: dense 256, dense 4*4*64, 4 transposed
conv layers (64, 32, 32, channels; 4x4, stride 2), output logits (n, 64, 64, c).
Output layers compute in float32 whatever the Keras precision policy, so under
`run.precision = 'mixed_bfloat16'` the losses still see float32 tensors.

`model.architecture = 'stylegan'` is paper 001's expressive architecture (appendix C.3),
which QLAE's and Tripod's published numbers depend on: a conv encoder with instance
normalisation and a StyleGAN-like decoder with AdaIN. It is much heavier than dlib's
(a GPU architecture); the dlib one stays the default so methods compare inside the suite.
"""

from __future__ import annotations

import keras
from keras import layers


def conv_encoder(input_shape=(64, 64, 1), num_latents: int = 10, name: str = "encoder"
                 ) -> keras.Model:
    """images float32 (n, 64, 64, c) in [0, 1] -> {'mean', 'logvar'}, each (n, num_latents)."""
    images = keras.Input(shape=input_shape)
    x = images
    for filters, kernel in ((32, 4), (32, 4), (64, 2), (64, 2)):
        x = layers.Conv2D(filters, kernel, strides=2, padding="same", activation="relu")(x)
    x = layers.Dense(256, activation="relu")(layers.Flatten()(x))
    outputs = {"mean": layers.Dense(num_latents, name="mean", dtype="float32")(x),
               "logvar": layers.Dense(num_latents, name="logvar", dtype="float32")(x)}
    return keras.Model(images, outputs, name=name)


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


def _conv_block(x, width: int, transpose: bool = False, style=None):
    """Paper 001 C.3 block: two resolution-preserving layers (3x3, stride 1) and one that
    halves (conv) or doubles (transposed conv) the resolution (4x4, stride 2), each followed
    by leaky ReLU (0.3) and instance norm (encoder) or AdaIN of `style` (decoder)."""
    conv = layers.Conv2DTranspose if transpose else layers.Conv2D
    for kernel, stride in ((3, 1), (3, 1), (4, 2)):
        x = layers.LeakyReLU(0.3)(conv(width, kernel, strides=stride, padding="same")(x))
        if style is None:
            x = layers.GroupNormalization(groups=-1, epsilon=1e-5)(x)
        else:
            x = AdaptiveInstanceNorm()([x, style])
    return x


class AdaptiveInstanceNorm(layers.Layer):
    """[features (n, h, w, c), style (n, s)] -> instance-normalised features scaled and
    shifted per channel by affine projections of the style (paper 001 C.3, StyleGAN)."""

    def build(self, input_shape):
        channels = input_shape[0][-1]
        self.normalize = layers.GroupNormalization(groups=-1, center=False, scale=False,
                                                   epsilon=1e-5)
        self.scale = layers.Dense(channels, bias_initializer="ones")
        self.shift = layers.Dense(channels)
        self.scale.build(input_shape[1])
        self.shift.build(input_shape[1])

    def call(self, inputs):
        features, style = inputs
        scale = self.scale(style)[:, None, None, :]
        shift = self.shift(style)[:, None, None, :]
        return self.normalize(features) * scale + shift


class LearnedConstant(layers.Layer):
    """The decoder's starting feature map (4, 4, 256), every entry initialised to 0.1, tiled
    over the batch of its input (paper 001 C.3)."""

    def __init__(self, shape, **kwargs):
        super().__init__(**kwargs)
        self.map_shape = tuple(shape)

    def build(self, input_shape):
        self.value = self.add_weight(shape=self.map_shape,
                                     initializer=keras.initializers.Constant(0.1),
                                     name="value")

    def call(self, inputs):
        batch = keras.ops.shape(inputs)[0]
        return keras.ops.broadcast_to(keras.ops.cast(self.value, inputs.dtype)[None],
                                      (batch,) + self.map_shape)

    def get_config(self):
        return {**super().get_config(), "shape": self.map_shape}


def stylegan_encoder(input_shape=(64, 64, 1), num_latents: int = 10, widths=(32, 64, 128, 256),
                     name: str = "encoder") -> keras.Model:
    """Paper 001 C.3 encoder: 4 blocks (widths 32-256) down to (4, 4, 256), flatten, two
    dense 256 ReLU, affine heads -> {'mean', 'logvar'}, each (n, num_latents)."""
    images = keras.Input(shape=input_shape)
    x = images
    for width in widths:
        x = _conv_block(x, width)
    x = layers.Flatten()(x)
    for _ in range(2):
        x = layers.Dense(256, activation="relu")(x)
    outputs = {"mean": layers.Dense(num_latents, name="mean", dtype="float32")(x),
               "logvar": layers.Dense(num_latents, name="logvar", dtype="float32")(x)}
    return keras.Model(images, outputs, name=name)


def stylegan_decoder(num_latents: int = 10, output_shape=(64, 64, 1),
                     widths=(256, 128, 64, 32), name: str = "decoder") -> keras.Model:
    """Paper 001 C.3 decoder: w = two dense 256 ReLU of z; a learned (4, 4, 256) map of 0.1s
    through 4 style blocks (widths 256-32, transposed convs + leaky ReLU + AdaIN(w)) to
    64x64, then a 1x1 conv -> pixel logits (n, 64, 64, c)."""
    latents = keras.Input(shape=(num_latents,))
    style = latents
    for _ in range(2):
        style = layers.Dense(256, activation="relu")(style)
    x = LearnedConstant((4, 4, 256))(style)
    for width in widths:
        x = _conv_block(x, width, transpose=True, style=style)
    logits = layers.Conv2D(output_shape[-1], 1, dtype="float32")(x)
    return keras.Model(latents, logits, name=name)


def mean_only(encoder: keras.Model, name: str) -> keras.Model:
    """`encoder` without its log-variance head, for deterministic methods (AE, PCL): every
    remaining weight is trained, and no untrained variance is ever reported."""
    return keras.Model(encoder.input, {"mean": encoder.output["mean"]}, name=name)
