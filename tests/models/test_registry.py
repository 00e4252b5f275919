"""One registry entry per method, gin only at the edge (issue 18, items 1 and 2): settings
and optimisers reach a model as arguments, from a plain dict or from gin alike."""

import ast
import pathlib
import subprocess
import sys

import gin
import pytest

from models import configurables, optimizers, registry

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def clean_gin():
    gin.clear_config()
    yield
    gin.clear_config()


def _factor_vae_settings(model):
    return (model.gamma, float(model.model_optimizer.learning_rate),
            float(model.discriminator_optimizer.beta_1))


def test_settings_and_optimisers_reach_the_model_as_arguments(clean_gin):
    plain = registry.make_model((64, 64, 1), "factor_vae", num_latents=3, settings={
        "factor_vae": {"gamma": 7.0}, "adam": {"learning_rate": 1e-3},
        "factor_vae_discriminator_adam": {"beta_1": 0.6}})
    assert _factor_vae_settings(plain) == pytest.approx((7.0, 1e-3, 0.6))
    default = registry.make_model((64, 64, 1), "factor_vae", num_latents=3)
    assert _factor_vae_settings(default) == pytest.approx((35.0, 1e-4, 0.5))
    gin.parse_config(["model.method = 'factor_vae'", "model.num_latents = 3",
                      "factor_vae.gamma = 7.0", "adam.learning_rate = 1e-3",
                      "factor_vae_discriminator_adam.beta_1 = 0.6"])
    assert _factor_vae_settings(configurables.configured_model((64, 64, 1))) == \
        pytest.approx((7.0, 1e-3, 0.6))
    # the library constructors ignore gin: only the edge reads it
    assert _factor_vae_settings(registry.make_model((64, 64, 1), "factor_vae", 3)) == \
        pytest.approx((35.0, 1e-4, 0.5))


def test_every_optimiser_is_configurable_and_every_entry_names_known_ones(clean_gin):
    named = {o for spec in registry.MODELS.values() for o in spec.optimizers.values()}
    assert named <= set(optimizers.OPTIMIZERS)
    for name, factory in optimizers.OPTIMIZERS.items():
        gin.clear_config()
        gin.parse_config([f"{name}.learning_rate = 0.0123"])
        assert float(configurables.configured_optimizer(name).learning_rate) == \
            pytest.approx(0.0123), name
        assert float(factory().learning_rate) != pytest.approx(0.0123), name


def test_the_manipulation_game_takes_its_optimisers(clean_gin):
    from models.architectures import conv_decoder, conv_encoder
    from perturbations import manipulation
    pair = [(conv_encoder((64, 64, 1), 2), conv_decoder(2, (64, 64, 1)))]
    gin.parse_config(["manipulation_adam.learning_rate = 0.002"])
    chosen = [configurables.configured_optimizer("manipulation_adam") for _ in range(2)]
    game = manipulation.ManipulationGame(manipulation.manipulation_network(5), pair, pair,
                                         0.1, 1, *chosen)
    assert game.optimizers_list() == chosen
    assert float(game.manipulation_optimizer.learning_rate) == pytest.approx(0.002)
    default = manipulation.ManipulationGame(manipulation.manipulation_network(5), pair, pair,
                                            0.1)
    assert float(default.decoder_optimizer.learning_rate) == pytest.approx(1e-4)


def test_entries_are_complete_and_their_defaults_are_the_constructors():
    assert set(registry.METHODS) | set(registry.PLUGIN_METHODS) == set(registry.MODELS)
    for method, spec in registry.MODELS.items():
        assert spec.paper and spec.input_kind in (None, "images", "pairs",
                                                  "pairs_with_negatives"), method
        if spec.settings is not None:
            assert registry.CONFIGURABLES[registry.scope(method)] is spec.settings
    assert registry.CONFIGURABLES["factor_vae"].defaults == {"gamma": 35.0,
                                                             "discriminator_units": 1000}
    assert registry.scope("qvae") == "discrete_vae"


def test_unknown_settings_are_refused_before_anything_is_built(clean_gin):
    with pytest.raises(ValueError, match="beta_vae has no setting betta"):
        registry.make_model((64, 64, 1), "beta_vae", settings={"beta_vae": {"betta": 2.0}})
    with pytest.raises(ValueError, match="unknown settings 'beta_vea'"):
        registry.make_model((64, 64, 1), "beta_vae", settings={"beta_vea": {"beta": 2.0}})
    with pytest.raises(ValueError, match="model.method is not set"):
        configurables.configured_model((64, 64, 1))


def test_only_the_gin_layer_of_models_imports_gin():
    importing = []
    for path in sorted((ROOT / "models").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "gin" for n in names):
                importing.append(path.name)
    assert sorted(set(importing)) == ["configurables.py"]


@pytest.mark.slow
def test_layers_import_downwards_only():
    """benchmark/data and benchmark/metrics load no model, training, study or perturbation
    code; models/ loads no benchmark or perturbation code (docs/architecture.md, floors)
    but the leaves benchmark/core/errors.py (the one user-error base) and
    benchmark/core/quiet_start.py (TensorFlow's import made quiet), standard library
    only."""
    probe = "import sys, {}; print(' '.join(sorted(sys.modules)))"
    forbidden = ("models", "perturbations", "benchmark.runs", "benchmark.studies")
    for module, refused in (("benchmark.data", forbidden), ("benchmark.metrics", forbidden),
                            ("models.registry", ("benchmark", "perturbations")),
                            ("models.configurables", ("benchmark", "perturbations"))):
        out = subprocess.run([sys.executable, "-c", probe.format(module)], cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        loaded = [m for m in out.stdout.split()
                  if m not in ("benchmark", "benchmark.core", "benchmark.core.errors",
                               "benchmark.core.quiet_start")]
        assert not [m for m in loaded if m.split(".")[0] in refused or m in refused
                    or any(m.startswith(f"{r}.") for r in refused)], module
