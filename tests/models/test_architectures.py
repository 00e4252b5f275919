import numpy as np

from models import architectures


def test_conv_encoder_decoder_shapes_and_parameter_count():
    encoder = architectures.conv_encoder((64, 64, 3), num_latents=6)
    decoder = architectures.conv_decoder(6, (64, 64, 3))
    out = encoder(np.zeros((2, 64, 64, 3), np.float32))
    assert out["mean"].shape == (2, 6) and out["logvar"].shape == (2, 6)
    assert decoder(out["mean"]).shape == (2, 64, 64, 3)
    conv_shapes = [w.shape for w in encoder.weights if len(w.shape) == 4]
    assert conv_shapes == [(4, 4, 3, 32), (4, 4, 32, 32), (4, 4, 32, 64), (4, 4, 64, 64)]


def test_mlp_variant_shapes():
    encoder = architectures.mlp_encoder((64, 64, 1), num_latents=4, hidden=(32,))
    decoder = architectures.mlp_decoder(4, (64, 64, 1), hidden=(32,))
    out = encoder(np.zeros((3, 64, 64, 1), np.float32))
    assert decoder(out["mean"]).shape == (3, 64, 64, 1)
