"""Every optimiser of the suite: one plain factory each, arguments only (no gin here).

`OPTIMIZERS` names them; a method's registry entry (models/registry.py) says which one
each of its optimisers is, the registry builds them, and the gin layer
(models/configurables.py) registers every factory under its name, so each is configurable
(`adam.learning_rate = 1e-3`, `factor_vae_discriminator_adam.beta_1 = 0.5`). A model
constructor takes its optimiser(s) as arguments; these factories are only their defaults.
"""

from __future__ import annotations

import keras

from benchmark.core.errors import check_range


def _check_adam(name: str, learning_rate, beta_1=0.9, beta_2=0.999, epsilon=1e-7) -> None:
    """ConfigError unless learning_rate > 0, beta_1 and beta_2 in [0, 1], epsilon > 0."""
    check_range(f"{name}.learning_rate", learning_rate, 0.0, low_open=True)
    check_range(f"{name}.beta_1", beta_1, 0.0, 1.0)
    check_range(f"{name}.beta_2", beta_2, 0.0, 1.0)
    check_range(f"{name}.epsilon", epsilon, 0.0, low_open=True)


def dlib_adam(learning_rate: float = 1e-4, beta_1: float = 0.9, beta_2: float = 0.999,
              epsilon: float = 1e-8) -> keras.optimizers.Optimizer:
    """disentanglement_lib's optimiser (Locatello et al. 2019): the β-VAE family, FactorVAE's
    VAE, SlowVAE, PCL."""
    _check_adam("adam", learning_rate, beta_1, beta_2, epsilon)
    return keras.optimizers.Adam(learning_rate, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon)


def factor_vae_discriminator_adam(learning_rate: float = 1e-4, beta_1: float = 0.5,
                                  beta_2: float = 0.9, epsilon: float = 1e-7
                                  ) -> keras.optimizers.Optimizer:
    """FactorVAE's discriminator (disentanglement_lib: Adam lr 1e-4, beta1 0.5, beta2 0.9)."""
    _check_adam("factor_vae_discriminator_adam", learning_rate, beta_1, beta_2, epsilon)
    return keras.optimizers.Adam(learning_rate, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon)


def paper001_adamw(learning_rate: float = 1e-3, beta_1: float = 0.9, beta_2: float = 0.99,
                   weight_decay: float = 0.1, clipnorm: float | None = 1.0
                   ) -> keras.optimizers.Optimizer:
    """AdamW of paper 001 Table 9 (QLAE, QLVAE, VQ-VAE, BioAE): weight decay 0.1, its tuned
    QLAE value on Table 11's grid; gradient clipping 1.0."""
    _check_adam("adamw", learning_rate, beta_1, beta_2)
    check_range("adamw.weight_decay", weight_decay, 0.0)
    return keras.optimizers.AdamW(learning_rate, weight_decay=weight_decay, beta_1=beta_1,
                                  beta_2=beta_2, clipnorm=clipnorm)


def tripod_adamw(learning_rate: float = 1e-3, beta_1: float = 0.9, beta_2: float = 0.99,
                 weight_decay: float = 1e-4) -> keras.optimizers.Optimizer:
    """Paper 000 Table 4: AdamW(1e-3, 0.9, 0.99); the paper gives no weight decay, 1e-4 is
    optax's adamw default (the authors' code is JAX)."""
    _check_adam("tripod_adamw", learning_rate, beta_1, beta_2)
    check_range("tripod_adamw.weight_decay", weight_decay, 0.0)
    return keras.optimizers.AdamW(learning_rate, weight_decay=weight_decay, beta_1=beta_1,
                                  beta_2=beta_2)


def manipulation_adam(learning_rate: float = 1e-4, beta_1: float = 0.9, beta_2: float = 0.999,
                      epsilon: float = 1e-7) -> keras.optimizers.Optimizer:
    """Paper 002 appendix B.1: the optimiser of m(w) in the manipulation game
    (perturbations/manipulation.py); the reference decoders have their own,
    `game_decoder_adam`, with the same defaults."""
    _check_adam("manipulation_adam", learning_rate, beta_1, beta_2, epsilon)
    return keras.optimizers.Adam(learning_rate, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon)


def game_decoder_adam(learning_rate: float = 1e-4, beta_1: float = 0.9, beta_2: float = 0.999,
                      epsilon: float = 1e-7) -> keras.optimizers.Optimizer:
    """Paper 002 appendix B.1: the optimiser of the reference decoders in the manipulation
    game (Adam 1e-4, 0.9, 0.999, 1e-7 like m's; a gin scope of its own, so that binding
    m's learning rate does not change the decoders')."""
    _check_adam("game_decoder_adam", learning_rate, beta_1, beta_2, epsilon)
    return keras.optimizers.Adam(learning_rate, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon)


def cosine_adam(learning_rate: float = 1e-3, decay_steps: int = 50000,
                end: float = 1.25e-6) -> keras.optimizers.Optimizer:
    """Adam whose learning rate is cosine-annealed from `learning_rate` to `end` over
    `decay_steps` updates and held there (paper 003 appendix A.1; the FactorQVAE family's
    schedule, set by its own settings `discrete_vae.learning_rate / lr_decay_steps /
    lr_end`, hence not in OPTIMIZERS). 0 <= end <= learning_rate."""
    return keras.optimizers.Adam(keras.optimizers.schedules.CosineDecay(
        learning_rate, int(decay_steps), alpha=end / learning_rate))


#: every optimiser a registry entry can name, by its gin name
OPTIMIZERS = {"adam": dlib_adam, "factor_vae_discriminator_adam": factor_vae_discriminator_adam,
              "adamw": paper001_adamw, "tripod_adamw": tripod_adamw,
              "manipulation_adam": manipulation_adam, "game_decoder_adam": game_decoder_adam}
