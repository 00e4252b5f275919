"""The manipulation network m(w) of paper 002 (Zietlow et al. 2021) and the game that trains it.

Network (appendix B.1): disentanglement_lib's deconvolutional decoder whose input MLP is
extended by a single-neuron hidden layer, input = ground-truth factors w, output bounded
by tanh so ||m(w)||_inf <= 1 (sec. 4.4); x' = reflect(x + eps m(w)).
Choices where the paper is silent (also in docs/perturbations.md):
- w enters as factor classes scaled to [0, 1] (class / (size - 1)), so every factor has
  the same range whatever its number of values;
- the single neuron is linear (a ReLU neuron could die and leave m constant); the rest of
  the decoder is dlib's (ReLU), its output layer followed by tanh.

Training (sec. 4.4, appendix B.1): the encoders of the entangled and disentangled
reference beta-VAEs are frozen and fed the *original* image x; each reference decoder
(initialised from its model) minimises its own Bernoulli reconstruction loss of the
*modified* image x' from 5 latent samples per image; m minimises
    L_rec^ent(x') - L_rec^dis(x')
(averaged over the models of each side, so an ensemble of 4 + 4 weighs both sides alike).
Decoders get 3x more batches than m: each step of `ManipulationGame.train_step` takes a
batch of 4n images, makes 3 decoder updates on its first three quarters and one update of
m on the last. m and the decoders have separate optimisers, both Adam(lr 1e-4, 0.9, 0.999,
eps 1e-7) (appendix B.1; `models.optimizers.manipulation_adam` for m, gin
`manipulation_adam.*`, and `game_decoder_adam` for the decoders, gin `game_decoder_adam.*`).

Choices that decide whether m learns a w-dependent pattern:
- `reconstruction`: the game's loss of x' given the decoders' logits l. 'squared_error'
  (the default) is paper 002's eqs. 4-5, ||x' - sigmoid(l)||^2; 'bernoulli' is the
  sigmoid cross-entropy the reference models trained with. What m learns is the gradient
  of the loss with respect to its *target* x': for the cross-entropy softplus(l) - x' l
  it is -l, the decoder's logit, which on dSprites' background is a large negative
  number almost the same for every image, so m's gradient is the difference of how
  confidently the two decoders predict the background (measured: 99.9 % of
  its energy on background pixels, a third of it image-independent); for the squared
  error it is 2 (x' - sigmoid(l)), the decoder's error, which is small where a decoder
  predicts well and carries the image-dependent part.
- `output_init_scale`: m's last layer starts with its kernel and bias multiplied by this
  (default 0.1), so tanh starts unsaturated (the published artefacts had 45-70 % of
  their pixels at |m| > 0.9, where tanh's gradient is below 0.19).
- `mean_penalty`: lambda of lambda * mean over pixels of (E_batch m(w))^2 added to m's
  loss: a pattern shared by every image is absorbed by the decoders as a bias and adds no
  variance along the factors (default 0: the paper's objective).
- `unit_variance_init` (perturbations.generate): with dlib's (Glorot) initial weights and
  a one-dimensional input, m's activations shrink layer by layer (mean |h| 2e-2 after the
  first dense layer, 3e-4 after the third transposed convolution, on full dSprites), so
  one Adam step of 1e-3 on a bias outweighs them; measured on full dSprites:
  the 32x32 transposed convolution had no active unit for any w by update 20, with or
  without the mean penalty, and m was one constant pattern for good (a layer that outputs
  zero passes no gradient). `unit_variance_init` rescales each layer's initial weights
  so its pre-activation has unit variance over the factors (LSUV, Mishkin & Matas 2016):
  same architecture, same initial directions; all layers stayed active.
Every step also counts m's dead layers (`m_dead_layers`: hidden ReLU layers with no
positive output for any image of the batch); `dead_manipulation_check` turns a lasting
count into the reason the generation stops.
Each step also returns m's diagnostics: the share of its batch energy in the batch mean
(`m_mean_share`, image-independent), its fraction of saturated pixels, and the one
neuron's weight norm and output spread (`scalar_weight_norm`, `scalar_std`), so their
trajectories are in TensorBoard.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from models import losses
from models.architectures import conv_decoder
from models.optimizers import game_decoder_adam, manipulation_adam


#: the reconstruction losses the game can use (`reconstruction`; module docstring)
RECONSTRUCTIONS = {"squared_error": losses.gaussian_reconstruction,
                   "bernoulli": losses.bernoulli_reconstruction}
#: |m| above this counts as saturated (tanh's gradient 1 - m^2 < 0.19)
SATURATION = 0.9


def manipulation_network(num_factors: int, output_shape=(64, 64, 1),
                         output_init_scale: float = 1.0) -> keras.Model:
    """m: scaled factors float32 (n, k) in [0, 1] -> perturbation (n, 64, 64, c) in [-1, 1].
    `output_init_scale` multiplies the initial kernel and bias of the last layer (the
    architecture, hence a saved artefact's weights, is the same for every value)."""
    if not 0.0 < float(output_init_scale) <= 1.0:
        raise ValueError(f"output_init_scale must be in (0, 1], found {output_init_scale}")
    factors = keras.Input(shape=(num_factors,))
    scalar = keras.layers.Dense(1, name="single_neuron")(factors)
    decoder = conv_decoder(num_latents=1, output_shape=tuple(output_shape),
                           name="manipulation_decoder")
    logits = decoder(scalar)
    bounded = keras.layers.Activation("tanh", dtype="float32")(logits)
    if float(output_init_scale) != 1.0:
        last = decoder.layers[-1]
        last.set_weights([w * float(output_init_scale) for w in last.get_weights()])
    return keras.Model(factors, bounded, name="manipulation")


def neuron_direction_deg(weights):
    """The direction of the one neuron's input weights a = (a_0, a_1) in the plane of two
    factors, in degrees in [0, 180) (a and -a are one direction: m varies along it either
    way): 0 follows factor 0 alone, 90 factor 1 alone, 45 and 135 mix both equally."""
    weights = tf.cast(weights, tf.float32)
    return tf.math.floormod(tf.math.atan2(weights[1], weights[0]) * (180.0 / np.pi), 180.0)


def set_neuron_direction(manipulation: keras.Model, direction) -> list[float]:
    """Points the one neuron's input weights along `direction` ('diagonal': equal weight
    on every factor, or k numbers), keeping their initial norm and bias; returns the
    weights. The game's choice of which factors m depends on starts here."""
    neuron = manipulation.get_layer("single_neuron")
    kernel, bias = neuron.get_weights()
    k = kernel.shape[0]
    if isinstance(direction, str):
        if direction != "diagonal":
            raise ValueError(f"neuron_direction: expected 'diagonal' or {k} numbers, found "
                             f"{direction!r}")
        vector = np.ones(k)
    else:
        vector = np.asarray(direction, dtype=np.float64)
        if vector.shape != (k,) or not np.all(np.isfinite(vector)) or not np.any(vector):
            raise ValueError(f"neuron_direction: expected 'diagonal' or {k} finite numbers, "
                             f"not all 0 (one per factor), found {list(direction)!r}")
    new = vector / np.linalg.norm(vector) * np.linalg.norm(kernel)
    neuron.set_weights([new.reshape(kernel.shape).astype(kernel.dtype), bias])
    return new.tolist()


def hidden_relu_layers(manipulation: keras.Model) -> list:
    """The ReLU layers of m's decoder, input to output (5 for dlib's decoder)."""
    decoder = manipulation.get_layer("manipulation_decoder")
    return [layer for layer in decoder.layers
            if getattr(layer, "activation", None) is keras.activations.relu]


def hidden_activations(manipulation: keras.Model) -> keras.Model:
    """scaled factors (n, k) -> [output of each hidden ReLU layer of m's decoder]."""
    decoder = manipulation.get_layer("manipulation_decoder")
    probe = keras.Model(decoder.inputs, [layer.output for layer in hidden_relu_layers(
        manipulation)], name="manipulation_hidden")
    factors = keras.Input(shape=manipulation.input_shape[1:])
    return keras.Model(factors, probe(manipulation.get_layer("single_neuron")(factors)),
                       name="manipulation_probe")


def unit_variance_init(manipulation: keras.Model, factors) -> list[float]:
    """Rescales, input to output, the single neuron's and each hidden layer's initial
    kernel and bias so that the layer's pre-activation has standard deviation 1 over
    `factors` (scaled factors float32 (n, k) in [0, 1], n >= 2; LSUV, Mishkin & Matas
    2016); the output layer is left as it is (`output_init_scale` sets it). Returns the
    standard deviations divided by, in that order. ValueError when a layer's
    pre-activation is constant over `factors` (nothing to scale)."""
    decoder = manipulation.get_layer("manipulation_decoder")
    layers = [manipulation.get_layer("single_neuron")] + [
        layer for layer in decoder.layers if not isinstance(layer, keras.layers.InputLayer)]
    scales = []
    h = tf.convert_to_tensor(factors, tf.float32)
    for layer in layers[:-1]:
        if layer.weights:
            activation = layer.activation
            layer.activation = keras.activations.linear
            try:
                spread = float(tf.math.reduce_std(layer(h)))
            finally:
                layer.activation = activation
            if not spread > 0.0:
                raise ValueError(f"unit_variance_init: {layer.name}'s pre-activation is "
                                 f"constant over the {int(h.shape[0])} factor vectors given")
            layer.set_weights([w / spread for w in layer.get_weights()])
            scales.append(spread)
        h = layer(h)
    return scales


def dead_manipulation_check(patience: int = 10):
    """A stop test for the generation's training loop (`benchmark.runs.train.train`'s
    `stop_check`): terms -> a message once `m_dead_layers` has been > 0 at `patience`
    consecutive steps (m is then one pattern for every w, and stays so: a ReLU layer that
    outputs zero passes no gradient to the layers before it), else None."""
    if int(patience) < 1:
        raise ValueError(f"patience must be >= 1, found {patience}")
    run = 0

    def check(terms: dict) -> str | None:
        nonlocal run
        dead = int(terms.get("m_dead_layers", 0))
        run = run + 1 if dead > 0 else 0
        if run < patience:
            return None
        return (f"m died: {dead} hidden layer(s) of its decoder output zero for every "
                f"image of the batch at {patience} consecutive updates, so m(w) is one "
                "constant pattern and no gradient reaches the layers before; lower "
                "manipulation_adam.learning_rate or set generation.unit_variance_init = "
                "True (perturbations/manipulation.py says why)")
    return check


def reflect(x):
    """x - 2 relu(x - 1) + 2 relu(-x) (appendix B.1): identity on [0, 1], differentiable."""
    return x - 2.0 * tf.nn.relu(x - 1.0) + 2.0 * tf.nn.relu(-x)


def decoded_loss(encoder, decoder, images, targets, latent_samples: int, loss_fn, seed):
    """Mean over images and latent samples of loss_fn(targets, decoder(z)), z drawn
    `latent_samples` times per image from the frozen encoder's posterior of the *original*
    images (appendix B.1). images, targets: (n, 64, 64, c) in [0, 1]; seed: int64 (2,)."""
    codes = encoder(images, training=False)
    mean = tf.repeat(codes["mean"], latent_samples, axis=0)
    logvar = tf.repeat(codes["logvar"], latent_samples, axis=0)
    z = mean + tf.exp(0.5 * logvar) * tf.random.stateless_normal(tf.shape(mean), seed)
    targets = tf.repeat(targets, latent_samples, axis=0)
    return tf.reduce_mean(loss_fn(targets, decoder(z, training=True)))


class ManipulationGame(keras.Model):
    """m(w) against frozen reference encoders and trainable copies of their decoders.

    Args:
      manipulation: the network m (see `manipulation_network`).
      entangled, disentangled: lists of (encoder, decoder) pairs of the reference models;
        encoders map images to {'mean', 'logvar'}, decoders latents to pixel logits.
        Encoders are frozen here; decoders are trained.
      eps: manipulation strength (0.1 dSprites, 0.175 Shapes3D; sec. 5.2).
      latent_samples: latent samples per image in the decoder losses (5 in appendix B.1).
      manipulation_optimizer, decoder_optimizer: of m and of the reference decoders (None:
        `manipulation_adam()` and `game_decoder_adam()`, appendix B.1).
      reconstruction: 'squared_error' (eqs. 4-5, default) or 'bernoulli' (module docstring).
      mean_penalty: weight >= 0 of the batch-mean penalty on m (module docstring).
      neuron_optimizer: of the one neuron's weights alone (None: they are m's like the
        rest, the paper's setting). m(w) varies only along its direction a in factor
        space, and at m's learning rate a stays where it was initialised (measured: norm
        0.52 -> 0.58 over 1,000 updates, direction within 3 degrees), so which factors m
        depends on is decided by the initial draw unless a learns faster.
    Batches are (scaled factors (4n, k), original images (4n, 64, 64, c)).
    """

    input_kind = "factors_and_images"

    def __init__(self, manipulation, entangled, disentangled, eps: float,
                 latent_samples: int = 5, manipulation_optimizer=None, decoder_optimizer=None,
                 reconstruction: str = "squared_error", mean_penalty: float = 0.0,
                 neuron_optimizer=None, **kwargs):
        super().__init__(**kwargs)
        if not entangled or not disentangled:
            raise ValueError("the manipulation game needs at least one entangled and one "
                             f"disentangled reference, found {len(entangled)} and "
                             f"{len(disentangled)}")
        if not 0.0 < float(eps) <= 1.0:
            raise ValueError(f"manipulation eps must be in (0, 1], found {eps}")
        if int(latent_samples) < 1:
            raise ValueError(f"latent_samples must be >= 1, found {latent_samples}")
        if reconstruction not in RECONSTRUCTIONS:
            raise ValueError(f"the game's reconstruction must be one of "
                             f"{', '.join(map(repr, RECONSTRUCTIONS))}, found {reconstruction!r}")
        if not float(mean_penalty) >= 0.0:
            raise ValueError(f"mean_penalty must be >= 0, found {mean_penalty}")
        self.reconstruction = reconstruction
        self.reconstruction_loss = RECONSTRUCTIONS[reconstruction]
        self.mean_penalty = float(mean_penalty)
        self.manipulation = manipulation
        self.eps = float(eps)
        self.latent_samples = int(latent_samples)
        self.entangled_encoders = [e for e, _ in entangled]
        self.entangled_decoders = [d for _, d in entangled]
        self.disentangled_encoders = [e for e, _ in disentangled]
        self.disentangled_decoders = [d for _, d in disentangled]
        for encoder in self.entangled_encoders + self.disentangled_encoders:
            encoder.trainable = False
        self.manipulation_optimizer = manipulation_optimizer or manipulation_adam()
        self.decoder_optimizer = decoder_optimizer or game_decoder_adam()
        self.neuron_optimizer = neuron_optimizer
        self.hidden_activations = hidden_activations(manipulation)

    def _decoder_variables(self) -> list:
        return [v for d in self.entangled_decoders + self.disentangled_decoders
                for v in d.trainable_variables]

    def _neuron_variables(self) -> list:
        return self.manipulation.get_layer("single_neuron").trainable_variables

    def _m_variables(self) -> list:
        """m's variables its own optimiser updates (all but the neuron's when that has
        its own)."""
        if self.neuron_optimizer is None:
            return self.manipulation.trainable_variables
        neuron = {id(v) for v in self._neuron_variables()}
        return [v for v in self.manipulation.trainable_variables if id(v) not in neuron]

    def optimizers_list(self) -> list:
        return [self.manipulation_optimizer, self.decoder_optimizer,
                *([self.neuron_optimizer] if self.neuron_optimizer is not None else [])]

    def optimizer_variables(self) -> list:
        return [(self.manipulation_optimizer, self._m_variables()),
                (self.decoder_optimizer, self._decoder_variables()),
                *([(self.neuron_optimizer, self._neuron_variables())]
                  if self.neuron_optimizer is not None else [])]

    def modify(self, factors, images):
        """x' = reflect(x + eps m(w)), (n, 64, 64, c) in [0, 1]."""
        return reflect(images + self.eps * self.manipulation(factors, training=True))

    def _reconstruction(self, encoder, decoder, images, modified, seed):
        return decoded_loss(encoder, decoder, images, modified, self.latent_samples,
                            self.reconstruction_loss, seed)

    def side_losses(self, factors, images, seed, stop_manipulation: bool):
        """(mean entangled loss, mean disentangled loss, list of per-decoder losses)."""
        modified = self.modify(factors, images)
        if stop_manipulation:
            modified = tf.stop_gradient(modified)
        pairs = ([(e, d) for e, d in zip(self.entangled_encoders, self.entangled_decoders)]
                 + [(e, d) for e, d in zip(self.disentangled_encoders,
                                           self.disentangled_decoders)])
        seeds = tf.random.experimental.stateless_split(seed, len(pairs))
        each = [self._reconstruction(e, d, images, modified, seeds[i])
                for i, (e, d) in enumerate(pairs)]
        n_ent = len(self.entangled_encoders)
        return tf.add_n(each[:n_ent]) / n_ent, tf.add_n(each[n_ent:]) / (len(each) - n_ent), each

    def train_step(self, batch, step, seed) -> dict:
        """3 decoder updates, then one update of m; returns the named terms."""
        factors, images = batch
        factor_chunks = tf.split(factors, 4)
        image_chunks = tf.split(images, 4)
        seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 4)
        decoder_variables = self._decoder_variables()
        for i in range(3):
            with tf.GradientTape() as tape:
                _, _, each = self.side_losses(factor_chunks[i], image_chunks[i], seeds[i], True)
                decoder_loss = tf.add_n(each)
            self.decoder_optimizer.apply_gradients(
                zip(tape.gradient(decoder_loss, decoder_variables), decoder_variables))
        m_variables = self._m_variables()
        neuron_variables = self._neuron_variables() if self.neuron_optimizer else []
        with tf.GradientTape() as tape:
            entangled, disentangled, _ = self.side_losses(factor_chunks[3], image_chunks[3],
                                                          seeds[3], False)
            m = self.manipulation(factor_chunks[3], training=True)
            mean_pattern = tf.reduce_mean(m, axis=0)
            penalty = tf.reduce_mean(tf.square(mean_pattern))
            loss = entangled - disentangled + self.mean_penalty * penalty
        gradients = tape.gradient(loss, m_variables + neuron_variables)
        self.manipulation_optimizer.apply_gradients(
            zip(gradients[:len(m_variables)], m_variables))
        if self.neuron_optimizer is not None:
            self.neuron_optimizer.apply_gradients(
                zip(gradients[len(m_variables):], neuron_variables))
        return {"loss": loss, "reconstruction_entangled": entangled,
                "reconstruction_disentangled": disentangled, "mean_penalty": penalty,
                **self.diagnostics(factor_chunks[3], m)}

    def diagnostics(self, factors, m) -> dict:
        """Scalars of m on one batch: `m_mean_share` (share of E||m||^2 in the batch mean
        pattern, image-independent, in [0, 1]), `m_saturated` (fraction of |m| >
        SATURATION), `scalar_weight_norm`, `scalar_weight_<i>` and `scalar_std` (the one
        neuron's weight norm, its weight on factor i, and the spread of its output
        s = a . w + b over the batch), with two factors `scalar_direction_deg` (the
        direction of a in the factor plane, `neuron_direction_deg`), `m_dead_layers`
        (hidden ReLU layers of m's decoder with no positive output for any image of the
        batch)."""
        dead_layers = tf.add_n([tf.cast(tf.reduce_max(h) <= 0.0, tf.int32)
                                for h in self.hidden_activations(factors)])
        energy = tf.reduce_mean(tf.square(m))
        mean_energy = tf.reduce_mean(tf.square(tf.reduce_mean(m, axis=0)))
        neuron = self.manipulation.get_layer("single_neuron")
        scalar = neuron(factors)
        return {"m_mean_share": tf.math.divide_no_nan(mean_energy, energy),
                "m_saturated": tf.reduce_mean(tf.cast(tf.abs(m) > SATURATION, tf.float32)),
                "scalar_weight_norm": tf.norm(neuron.kernel),
                **{f"scalar_weight_{i}": neuron.kernel[i, 0]
                   for i in range(neuron.kernel.shape[0])},
                **({"scalar_direction_deg": neuron_direction_deg(neuron.kernel[:, 0])}
                   if neuron.kernel.shape[0] == 2 else {}),
                "scalar_std": tf.math.reduce_std(scalar),
                "m_dead_layers": dead_layers}


#: rows of every call of m inside `manipulation_delta_fn` (a training batch's size)
DELTA_CALL_ROWS = 64


def manipulation_delta_fn(manipulation: keras.Model, factor_sizes,
                          call_rows: int = DELTA_CALL_ROWS):
    """delta_fn for `AdditivePerturbation`: factor classes int (n, k) -> m(w) float32
    (n, 64, 64, c) in [-1, 1], deterministic (inference mode, no randomness).

    m runs on chunks of exactly `call_rows` rows (the last padded, its padding dropped):
    CPU kernels are chosen by the batch's shape (oneDNN on AVX2 gives a 1-ulp different
    m(w) for 64 rows than for 512), and one shape makes each image's delta the same bits
    whether the images are rendered a batch at a time or materialised all at once."""
    from benchmark.data.pipeline import scaled_factors
    from benchmark.metrics.codes import batches

    def delta(factors: np.ndarray) -> np.ndarray:
        scaled = scaled_factors(factors, factor_sizes)
        if len(scaled) == 0:
            return np.zeros((0,) + tuple(manipulation.output_shape[1:]), np.float32)
        out = []
        for chunk in batches(scaled, call_rows):
            padded = np.concatenate([chunk, np.repeat(chunk[:1], call_rows - len(chunk), 0)])
            out.append(np.asarray(manipulation(padded, training=False))[:len(chunk)])
        return np.concatenate(out).astype(np.float32)
    return delta
