"""Installs the disentanglement inductive-bias benchmark suite."""

from setuptools import find_packages, setup

setup(
    name="disentangle-bench",
    version="0.1.0",
    description="Reference benchmark suite for auditing inductive biases in disentangled "
                "representation learning (dSprites, Shapes3D; original, adversarially "
                "modified and noisy variants).",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["benchmark", "benchmark.*", "perturbations",
                                    "perturbations.*", "models", "models.*"]),
    install_requires=[
        "tensorflow>=2.16,<3",
        "keras>=3",                     # imported directly (TensorFlow >= 2.16 brings it)
        "tensorflow-probability[tf]>=0.24",
        "numpy>=1.26",
        "h5py>=3.10",
        # DCI's default classifier reads HistGradientBoostingClassifier._predictors (split
        # gains; sklearn has no public per-feature importances for it): raise the bound
        # once tests/test_dependencies.py passes on the newer release.
        # InfoE fits multinomial logistic regressions by 'newton-cholesky' (multinomial
        # since 1.6).
        "scikit-learn>=1.6,<1.10",
        "joblib>=1.3",                  # DCI fits factors in parallel (also a scikit-learn dep)
        "threadpoolctl>=3.1",           # one BLAS thread for InfoE's fits (a scikit-learn dep)
        "absl-py>=2.0",
        "gin-config>=0.5",
        "scipy>=1.11",
        "tqdm>=4.66",
        "matplotlib>=3.8",
        "tensorboard>=2.16",            # tf.summary writers (training curves)
        "pandas>=2.1",                  # the tidy per-run table (benchmark/runs/results.py, report)
    ],
    extras_require={
        # Ray in the test extra: the Ray backend is tested on a local (127.0.0.1) instance.
        "test": ["pytest>=8", "pytest-xdist>=3.5", "ray>=2.9", "psutil>=5.9"],
        "ray": ["ray[default]>=2.9"],
    },
)
