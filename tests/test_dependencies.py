"""Every third-party module the package imports is declared in setup.py (a fresh install
must not depend on what happens to be installed), and tests import only declared extras."""

import ast
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: import name -> distribution name, where they differ
DISTRIBUTION = {"sklearn": "scikit-learn", "absl": "absl-py", "gin": "gin-config",
                "tensorflow_probability": "tensorflow-probability", "yaml": "pyyaml"}
OWN = {"benchmark", "models", "perturbations", "examples", "tests"}


def _imports(folders) -> set[str]:
    names = set()
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names.add(node.module.split(".")[0])
    return {n for n in names if n not in OWN and n not in sys.stdlib_module_names}


def _setup_keywords() -> dict:
    """install_requires and extras_require as written in setup.py's setup() call."""
    call = next(n for n in ast.walk(ast.parse((ROOT / "setup.py").read_text(encoding="utf-8")))
                if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "setup")
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords
            if k.arg in ("install_requires", "extras_require")}


def _requirements() -> dict[str, set[str]]:
    """{'install': names, extra: names} from the setup() call in setup.py."""
    keywords = _setup_keywords()

    def names(requirements):
        return {re.split(r"[<>=\[ ;]", r)[0].lower() for r in requirements}
    return {"install": names(keywords["install_requires"]),
            **{extra: names(reqs) for extra, reqs in keywords["extras_require"].items()}}


def test_package_imports_are_install_requires():
    requirements = _requirements()
    declared = requirements["install"]
    used = {DISTRIBUTION.get(n, n).lower() for n in _imports(["benchmark", "models",
                                                               "perturbations", "examples"])}
    optional = {"ray"}                               # imported lazily, an extra of its own
    assert optional <= requirements["ray"]
    used -= optional
    assert used <= declared, f"imported but not in install_requires: {used - declared}"


def test_test_imports_are_declared():
    requirements = _requirements()
    declared = requirements["install"] | requirements["test"]
    used = {DISTRIBUTION.get(n, n).lower() for n in _imports(["tests"])}
    assert used <= declared, f"tests import undeclared packages: {used - declared}"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


def test_scikit_learn_is_bounded_where_dci_reads_a_private_attribute():
    """benchmark/metrics/dci.py reads HistGradientBoostingClassifier._predictors (the fitted
    trees' split gains; there is no public equivalent), so setup.py caps scikit-learn at
    the releases tested; inside the cap the importances are the ones recorded with
    scikit-learn 1.9.1 (one fit per factor, since 2026-11-24)."""
    import numpy as np
    import sklearn

    from benchmark.metrics import dci

    requirement = next(r for r in _setup_keywords()["install_requires"]
                       if r.startswith("scikit-learn"))
    upper = re.search(r"<\s*([\d.]+)", requirement)
    assert upper, f"scikit-learn needs an upper bound in setup.py, found {requirement!r}"
    assert _version(sklearn.__version__) < _version(upper.group(1)), (
        f"scikit-learn {sklearn.__version__} is past the tested bound {requirement!r}")
    rng = np.random.default_rng(0)
    factors = rng.integers(0, 3, size=(120, 2))
    codes = np.c_[factors[:, 0] + 0.1 * rng.normal(size=120),
                  factors[:, 1] + 0.3 * rng.normal(size=120), rng.normal(size=120)]
    importance, train_acc, test_acc = dci.importance_matrix(
        factors[:80], codes[:80], factors[80:], codes[80:], np.random.default_rng(1),
        "hist_gbt", n_jobs=1)
    recorded = [[0.9999998023114471, 0.06302100729915155],
                [1.6509965873549413e-07, 0.8881235425752589],
                [3.258889416979019e-08, 0.04885545012558947]]
    np.testing.assert_allclose(importance, recorded, rtol=1e-9, atol=1e-15)
    assert train_acc.tolist() == [1.0, 1.0] and test_acc.tolist() == [1.0, 0.9]
