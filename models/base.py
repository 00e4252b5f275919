"""The one training contract the loop relies on (benchmark/runs/train.py).

A model computes `loss_terms(batch, step, seed) -> {'loss': ..., other named terms}`;
`TrainableModel` turns that into an optimiser update. Methods with more than one
optimiser (FactorVAE's discriminator) override `train_step`, `optimizers_list` and
`optimizer_variables`. `input_kind` tells the runner which stream to feed:
'images', 'pairs' (x_t, x_t+1) or 'pairs_with_negatives' (x_t, x_t+1, x_random).
The optimiser is an argument: the registry builds the configured one
(models/registry.py); without one, disentanglement_lib's Adam with its defaults.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from models.optimizers import dlib_adam


class TrainableModel(keras.Model):
    """A Keras model trained by one optimiser on the 'loss' term of `loss_terms`."""

    input_kind = "images"

    def __init__(self, optimizer: keras.optimizers.Optimizer | None = None, **kwargs):
        """optimizer: what updates the model (None: `dlib_adam()`, its defaults)."""
        super().__init__(**kwargs)
        self.model_optimizer = optimizer or dlib_adam()

    def loss_terms(self, batch, step, seed) -> dict:
        raise NotImplementedError

    def optimizers_list(self) -> list:
        return [self.model_optimizer]

    def optimizer_variables(self) -> list:
        """(optimizer, the variables it updates) pairs, to build them before a restore."""
        return [(self.model_optimizer, self.trainable_variables)]

    def train_step(self, batch, step, seed) -> dict:
        """One optimiser update on a batch; returns the named loss terms."""
        with tf.GradientTape() as tape:
            terms = self.loss_terms(batch, step, seed)
        variables = self.trainable_variables
        self.model_optimizer.apply_gradients(zip(tape.gradient(terms["loss"], variables),
                                                 variables))
        return terms
