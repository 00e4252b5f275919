"""Pre-registered hypotheses of a study: declared in its gin file, tested by the report.

A study declares them before it runs (gin, read by benchmark/studies/study.py):

    study.hypotheses = [
        {'id': 'H1', 'test': 'drop', 'model': 'beta_vae', 'dataset': 'dsprites',
         'variant': 'modified', 'family': 'primary'},
        {'id': 'H2', 'test': 'equivalence', 'model': 'pcl', 'dataset': 'dsprites',
         'variant': 'modified', 'margin_of': 'beta_vae', 'margin_fraction': 0.5,
         'family': 'primary'},
        {'id': 'H3', 'test': 'drop_difference', 'model': 'beta_vae', 'dataset': 'dsprites',
         'variant': 'modified', 'versus': 'noisy', 'family': 'secondary'},
    ]

study.py validates them (`normalise`) and writes them into study.json's settings before
any run trains; the report (benchmark/studies/report.py) tests them on the finished runs and shows
them first, each with its test, α, margin and outcome, and says when study.json records
earlier settings with other hypotheses (amended after the study started).

Fields (one dict per hypothesis; scores are the kept, not over-pruned, runs' values):
    id        unique name, e.g. 'H1' (required)
    test      'drop': H1 mean(original) − mean(variant) > 0, one-sided Welch;
              'equivalence': H1 |mean(original) − mean(variant)| < margin, TOST;
              'drop_difference': H1 drop(variant) > drop(versus), one-sided Welch of
              versus against variant (the original mean cancels, see stats.drop_difference);
              'noninferiority': H1 drop(variant) − drop(versus) < margin, one-sided
              Welch of versus against variant with the null at the margin: a drop no
              larger than the control's by the margin or more (a null that rules out an
              effect of the margin's size, where 'drop_difference' cannot)
              'greater': H1 mean(model, setting) − mean(versus_model, versus_setting) > 0
              on one variant (default 'original'), one-sided Welch: one method against
              another (PCL against the AE)
    model, dataset (required); variant (default 'modified'; 'original' for 'greater');
    versus (default 'noisy'); versus_model (required by 'greater'), versus_setting
              (default '')
    setting   line-search setting label, e.g. 'beta=8' (default '': none)
    metric    report column, e.g. 'MIG' (default), 'DCI-D'; or 'misalignment' (degrees off
              the factor axes, in a study whose battery names a plane). For a column
              where higher is worse (misalignment, Recon.) the scores are read negated,
              so a 'drop' is how much worse the variant is (the rise) for every metric
    alpha     level in (0, 0.5) (default 0.05; equal within a family)
    family    hypotheses of one family are Holm-adjusted together (default 'primary')
    margin    equivalence or non-inferiority margin in the metric's units, or instead
    margin_of (equivalence only) a model whose observed drop (same dataset, variant,
              metric) times margin_fraction (default 0.5) is the margin
    floor     a validity gate: the model whose runs on the original data are the floor (the
              AE); the hypothesis is tested only when the tested model's original arm is
              above it (one-sided Welch at the hypothesis' alpha, unadjusted), else its
              outcome is 'untestable at this scale' (a model at the floor has nothing to
              lose, so neither a drop nor its absence says anything); not for 'greater'
    margin_headroom (non-inferiority, equivalence; needs floor) the margin as this
              fraction of the headroom, mean(model, original) − mean(floor, original)
    paired    (drop, drop_difference) True: a one-sided paired t-test over the seeds both
              arms have, instead of Welch: a study's arms of one seed share the model's
              initial weights and the batch order, so a variant that barely changes the
              images follows the original's run seed by seed (the naive move of
              results/naive_move_ellipse_cpu: MIG correlated 0.91 with the original's over
              12 seeds) and the seed-to-seed spread cancels in the difference
    claim     the sentence shown (default: written from the fields)
"""

from __future__ import annotations

from collections import defaultdict

from benchmark.core.arm_label import base_of
from benchmark.statistics import stats

#: each test in words (no '|': the report prints them in a markdown table)
TESTS = {
    "drop": "one-sided Welch; alternative: mean(original) − mean({variant}) > 0",
    "equivalence": "TOST (two one-sided Welch); alternative: abs(mean(original) − "
                   "mean({variant})) < margin",
    "drop_difference": "one-sided Welch of {versus} against {variant}; alternative: "
                       "drop({variant}) > drop({versus})",
    "noninferiority": "one-sided Welch of {versus} against {variant} at the margin; "
                      "alternative: drop({variant}) − drop({versus}) < {margin_shown}",
    "greater": "one-sided Welch; alternative: mean({model}{setting_shown}) − "
               "mean({versus_model}{versus_setting_shown}) > 0 on {variant} data",
}
#: the tests that can be paired by seed ('paired': True), in words
PAIRED_TESTS = ("drop", "drop_difference")
PAIRED_NAMES = {
    "drop": "one-sided paired t over the seeds of both arms; alternative: mean over seeds "
            "of original − {variant} > 0",
    "drop_difference": "one-sided paired t over the seeds of both arms; alternative: mean "
                       "over seeds of {versus} − {variant} > 0, i.e. drop({variant}) > "
                       "drop({versus})",
}
#: report columns where a higher value is worse: the report reads their scores negated,
#: so that every test's "drop" is how much worse the variant is (here: the rise)
HIGHER_IS_WORSE = ("Recon.", "misalignment")
FIELDS = {"id", "test", "model", "dataset", "variant", "versus", "setting", "metric", "alpha",
          "family", "margin", "margin_of", "margin_fraction", "claim", "versus_model",
          "versus_setting", "floor", "margin_headroom", "paired"}


def normalise(hypotheses) -> list[dict]:
    """Checked plain dicts with the defaults filled in (the form study.json keeps);
    ValueError naming the hypothesis and the field on anything malformed."""
    out, alphas = [], {}
    for i, h in enumerate(hypotheses or ()):
        h = dict(h)
        where = f"study.hypotheses[{i}] ({h.get('id', 'no id')})"
        unknown = set(h) - FIELDS
        if unknown:
            raise ValueError(f"{where}: unknown fields {sorted(unknown)}; expected some of "
                             f"{sorted(FIELDS)}")
        for key in ("id", "test", "model", "dataset"):
            if not h.get(key):
                raise ValueError(f"{where}: '{key}' is required")
        if h["test"] not in TESTS:
            raise ValueError(f"{where}: test must be one of {sorted(TESTS)}, found "
                             f"{h['test']!r}")
        if h["test"] == "greater":
            if not h.get("versus_model"):
                raise ValueError(f"{where}: a 'greater' test needs 'versus_model', the "
                                 "method it is compared with")
            h = {"variant": "original", "versus_setting": "", **h}
        elif "versus_model" in h or "versus_setting" in h:
            raise ValueError(f"{where}: 'versus_model' and 'versus_setting' belong to a "
                             f"'greater' test, not to {h['test']!r}")
        h = {"variant": "modified", "versus": "noisy", "setting": "", "metric": "MIG",
             "alpha": stats.ALPHA, "family": "primary", **h}
        h["alpha"] = float(h["alpha"])
        if h["test"] == "greater" and h["metric"] in HIGHER_IS_WORSE:
            raise ValueError(f"{where}: a 'greater' test reads 'higher is better'; on "
                             f"{h['metric']!r}, where higher is worse, compare the methods "
                             "with the other one as 'model'")
        if not 0 < h["alpha"] < 0.5:
            raise ValueError(f"{where}: alpha must be in (0, 0.5) (each test is one-sided "
                             f"and shows its (1 - 2 alpha) interval), found {h['alpha']}")
        if alphas.setdefault(h["family"], h["alpha"]) != h["alpha"]:
            raise ValueError(f"{where}: family {h['family']!r} mixes alpha "
                             f"{alphas[h['family']]} and {h['alpha']}; use one per family")
        if "floor" in h:
            if h["test"] == "greater":
                raise ValueError(f"{where}: a 'greater' test is itself a comparison with "
                                 "another method; 'floor' belongs to the drop tests")
            if not isinstance(h["floor"], str) or not h["floor"] or h["floor"] == h["model"]:
                raise ValueError(f"{where}: floor must name another model of the study "
                                 f"(e.g. 'ae'), found {h['floor']!r}")
        if "margin_headroom" in h:
            if h["test"] not in ("noninferiority", "equivalence") or "floor" not in h:
                raise ValueError(f"{where}: 'margin_headroom' sets the margin of a "
                                 "non-inferiority or equivalence test from the headroom "
                                 "above its 'floor', which it needs")
            if "margin" in h or "margin_of" in h:
                raise ValueError(f"{where}: give one of 'margin', 'margin_of' or "
                                 "'margin_headroom'")
            fraction = h["margin_headroom"]
            if (isinstance(fraction, bool) or not isinstance(fraction, (int, float))
                    or not 0 < fraction <= 1):
                raise ValueError(f"{where}: margin_headroom must be a fraction in (0, 1], "
                                 f"found {fraction!r}")
            h["margin_headroom"] = float(fraction)
        if (h["test"] == "noninferiority" and "margin_headroom" not in h
                and ("margin" not in h or "margin_of" in h)):
            raise ValueError(f"{where}: a non-inferiority test needs 'margin' (a number in "
                             "the metric's units) or 'margin_headroom', not 'margin_of'")
        if h["test"] == "noninferiority" and "margin" in h:
            if not isinstance(h["margin"], (int, float)) or not h["margin"] > 0:
                raise ValueError(f"{where}: margin must be a number > 0, found "
                                 f"{h['margin']!r}")
            h["margin"] = float(h["margin"])
        if h["test"] == "equivalence" and "margin_headroom" not in h:
            if ("margin" in h) == ("margin_of" in h):
                raise ValueError(f"{where}: an equivalence test needs exactly one of "
                                 "'margin' (a number) or 'margin_of' (a model)")
            if "margin" in h and not float(h["margin"]) > 0:
                raise ValueError(f"{where}: margin must be > 0, found {h['margin']}")
            if "margin_of" in h:
                h["margin_fraction"] = float(h.get("margin_fraction", 0.5))
        if "paired" in h:
            if not isinstance(h["paired"], bool):
                raise ValueError(f"{where}: paired must be True or False, found "
                                 f"{h['paired']!r}")
            if h["paired"] and h["test"] not in PAIRED_TESTS:
                raise ValueError(f"{where}: 'paired' applies to the "
                                 f"{' and '.join(map(repr, PAIRED_TESTS))} tests, not to "
                                 f"{h['test']!r}")
        h.setdefault("claim", _claim(h))
        out.append(h)
    ids = [h["id"] for h in out]
    if len(set(ids)) != len(ids):
        raise ValueError(f"study.hypotheses: ids must be unique, found {ids}")
    return out


def check_grid(hypotheses: list[dict], models, datasets, variants, model_variants=None
               ) -> None:
    """ValueError when a (normalised) hypothesis names a model, dataset or variant that the
    study's grid does not train (model_variants: {model: [variants]} it trains on fewer),
    so a typo fails before the study starts, not in the report. Variants are compared
    without their strength ('modified@0.1' is 'modified')."""
    grid = {"model": set(models), "dataset": set(datasets),
            "variant": {base_of(v) for v in variants}}
    for h in hypotheses:
        compared = ([h["variant"], h["versus"]]
                    if h["test"] in ("drop_difference", "noninferiority")
                    else [h["variant"]] if h["test"] == "greater"
                    else ["original", h["variant"]])
        needs = {"model": [h["model"], h.get("margin_of", h["model"]),
                           h.get("versus_model", h["model"]), h.get("floor", h["model"])],
                 "dataset": [h["dataset"]], "variant": [base_of(v) for v in compared]}
        for field, wanted in needs.items():
            missing = [w for w in dict.fromkeys(wanted) if w not in grid[field]]
            if missing:
                raise ValueError(f"study.hypotheses {h['id']}: {field} {missing} is not in "
                                 f"the study's grid ({sorted(grid[field])})")
        for model in dict.fromkeys(needs["model"]):
            trained = {base_of(v) for v in (model_variants or {}).get(model, variants)}
            wanted = ["original"] if model == h.get("floor") else needs["variant"]
            missing = [v for v in dict.fromkeys(wanted) if v not in trained]
            if missing:
                raise ValueError(f"study.hypotheses {h['id']}: model {model!r} is not trained "
                                 f"on {missing} (study.model_variants: {sorted(trained)})")


def _margin_shown(h: dict) -> str:
    if "margin_headroom" in h:
        return f"{h['margin_headroom']:g} of the headroom above {h['floor']}"
    return f"{h['margin']:g}" if "margin" in h else "margin"


def _claim(h: dict) -> str:
    subject = f"{h['model']} {h['metric']} on {h['dataset']}"
    if h["setting"]:
        subject += f" ({h['setting']})"
    if h["metric"] in HIGHER_IS_WORSE:      # its drop is its rise
        subject += " (higher is worse)"
        if h["test"] == "drop":
            return f"{subject} rises on {h['variant']} data"
        if h["test"] == "drop_difference":
            return f"{subject} rises more on {h['variant']} than on {h['versus']} data"
    if h["test"] == "drop":
        return f"{subject} drops on {h['variant']} data"
    if h["test"] == "equivalence":
        return f"{subject} is unchanged on {h['variant']} data (within the margin)"
    if h["test"] == "greater":
        versus = h["versus_model"] + (f" ({h['versus_setting']})" if h["versus_setting"] else "")
        return f"{subject} is higher than {versus}'s on {h['variant']} data"
    if h["test"] == "noninferiority":
        return (f"{subject} drops on {h['variant']} data by less than {_margin_shown(h)} "
                f"more than on {h['versus']} data")
    return f"{subject} drops more on {h['variant']} than on {h['versus']} data"


def evaluate(hypotheses: list[dict], values) -> list[dict]:
    """One row per hypothesis (normalised), in order: the hypothesis' fields plus
    'test_name' (the test in words), 'margin' (None unless equivalence or
    non-inferiority), 'estimate' (the drop, the difference of means, or the difference of
    drops), 'ci_low', 'ci_high' (the (1 − 2α) Welch t interval, 90 % at α 0.05, the
    interval of every test here, each one-sided or two one-sided: its lower end is above 0
    (drop, drop_difference, greater), its upper end below the margin (non-inferiority), or
    it lies inside ±margin (equivalence) exactly when the unadjusted p is below α), 'n'
    (seeds of each group, e.g. '5 / 6'), 'p', 'p_holm' (Holm over every hypothesis
    registered in the family: one that cannot be tested counts as p = 1, so an arm that
    failed does not make the others' correction milder; None for it) and 'outcome'
    ('supported', 'not supported', 'untestable at this scale: <why>' when its floor gate
    fails, or 'not testable: <why>'); with a floor also 'floor_estimate' (the model's
    original mean minus the floor's) and 'floor_p' (the gate's one-sided p).
    values(model, dataset, variant, setting, metric) -> list of kept runs' scores;
    values(..., seeds=True) -> {seed: score} of the same runs (paired hypotheses only)."""
    rows = []
    for h in hypotheses:
        shown = {f"{key}_shown": f" ({h[key]})" if h.get(key) else ""
                 for key in ("setting", "versus_setting")}
        shown["margin_shown"] = _margin_shown(h)
        name = (PAIRED_NAMES if h.get("paired") else TESTS)[h["test"]]
        name = name.format(**h, **shown)
        if h.get("metric") in HIGHER_IS_WORSE:
            name += f", on −{h['metric']} (higher is worse: the alternative is that it rises)"
        row = {**h, "test_name": name,
               "margin": (h.get("margin") if h["test"] in ("noninferiority", "equivalence")
                          else None),
               "estimate": None, "ci_low": None, "ci_high": None, "n": "", "p": None}
        try:
            if h.get("floor"):
                gate, below = _floor_gate(h, values)
                row.update(gate)
                if below:
                    raise _BelowFloor(below)
            row.update(_test(h, values))
        except _BelowFloor as why:
            row["outcome"] = f"untestable at this scale: {why}"
        except _Untestable as why:
            row["outcome"] = f"not testable: {why}"
        rows.append(row)
    families = defaultdict(list)
    for row in rows:
        families[row["family"]].append(row)
    for family in families.values():
        adjusted = stats.adjust([1.0 if r["p"] is None else r["p"] for r in family], "holm")
        for row, p in zip(family, adjusted):
            row["p_holm"] = None if row["p"] is None else p
            if row["p"] is not None:
                row["outcome"] = "supported" if p < row["alpha"] else "not supported"
    return rows


class _Untestable(Exception):
    """Too few runs, or no margin: the hypothesis cannot be tested on these results."""


class _BelowFloor(Exception):
    """The tested model's original arm is not above its floor: nothing to lose."""


def _floor_gate(h: dict, values) -> tuple[dict, str | None]:
    """The validity gate of a hypothesis with a floor: ({'floor_estimate', 'floor_p'},
    None) when the model's original arm is above the floor's (one-sided Welch at the
    hypothesis' alpha), else the same and why it is not (both means and p)."""
    model = _group(values, h, h["model"], "original")
    floor = _group(values, h, h["floor"], "original", "")
    gate = stats.drop_test(model, floor)            # mean(model) − mean(floor) > 0
    found = {"floor_estimate": gate["drop"], "floor_p": gate["p_drop"]}
    if gate["p_drop"] < h["alpha"]:
        return found, None
    sign, side = (-1.0, "below") if h["metric"] in HIGHER_IS_WORSE else (1.0, "above")
    return found, (f"{h['model']} {h['metric']} on original "
                   f"{sign * sum(model) / len(model):.3f} is not {side} the {h['floor']} "
                   f"floor {sign * sum(floor) / len(floor):.3f} (one-sided Welch p "
                   f"{gate['p_drop']:.3g}, alpha {h['alpha']:g})")


def _headroom_margin(h: dict, values) -> float:
    model = _group(values, h, h["model"], "original")
    floor = _group(values, h, h["floor"], "original", "")
    return h["margin_headroom"] * (sum(model) / len(model) - sum(floor) / len(floor))


def _group(values, h: dict, model: str, variant: str, setting: str | None = None) -> list:
    setting = h["setting"] if setting is None else setting
    found = values(model, h["dataset"], variant, setting, h["metric"])
    if len(found) < 2:
        shown = f" ({setting})" if setting else ""
        raise _Untestable(f"{len(found)} kept {model}{shown} run(s) on {variant} data "
                          "(needs 2)")
    return found


def _pairs(values, h: dict, first: str, second: str) -> tuple[list, list]:
    """The scores of `h['model']` on variants `first` and `second` over the seeds both
    have, in seed order (values(..., seeds=True) -> {seed: score})."""
    a = values(h["model"], h["dataset"], first, h["setting"], h["metric"], seeds=True)
    b = values(h["model"], h["dataset"], second, h["setting"], h["metric"], seeds=True)
    shared = sorted(set(a) & set(b))
    if len(shared) < 2:
        raise _Untestable(f"{len(shared)} seed(s) with kept {h['model']} runs on both "
                          f"{first} and {second} data (a paired test needs 2)")
    return [a[s] for s in shared], [b[s] for s in shared]


def _paired_test(h: dict, values) -> dict:
    first = "original" if h["test"] == "drop" else h["versus"]
    a, b = _pairs(values, h, first, h["variant"])
    result = stats.paired(a, b, "greater", confidence=1 - 2 * h["alpha"])
    return {"estimate": result["diff"], "ci_low": result["ci_low"],
            "ci_high": result["ci_high"], "n": f"{len(a)} pairs", "p": result["p"]}


def _test(h: dict, values) -> dict:
    if h.get("paired"):
        return _paired_test(h, values)
    if h["test"] == "greater":
        first = _group(values, h, h["model"], h["variant"])
        second = _group(values, h, h["versus_model"], h["variant"], h["versus_setting"])
        result = stats.drop_test(first, second)     # mean(first) − mean(second) > 0
        low, high = stats.welch_ci(first, second, 1 - 2 * h["alpha"])
        return {"estimate": result["drop"], "ci_low": low, "ci_high": high,
                "n": f"{len(first)} / {len(second)}", "p": result["p_drop"]}
    variant = _group(values, h, h["model"], h["variant"])
    if h["test"] == "drop_difference":
        versus = _group(values, h, h["model"], h["versus"])
        result = stats.drop_difference(variant, versus)
        low, high = stats.welch_ci(versus, variant, 1 - 2 * h["alpha"])
        return {"estimate": result["diff"], "ci_low": low, "ci_high": high,
                "n": f"{len(variant)} / {len(versus)}", "p": result["p"]}
    if h["test"] == "noninferiority":
        versus = _group(values, h, h["model"], h["versus"])
        margin = (_headroom_margin(h, values) if "margin_headroom" in h
                  else float(h["margin"]))
        result = stats.welch(versus, variant, "less", null=margin)
        low, high = stats.welch_ci(versus, variant, 1 - 2 * h["alpha"])
        return {"margin": margin, "estimate": result["diff"], "ci_low": low,
                "ci_high": high, "n": f"{len(variant)} / {len(versus)}", "p": result["p"]}
    original = _group(values, h, h["model"], "original")
    if h["test"] == "drop":
        drop = stats.drop_test(original, variant)
        low, high = stats.welch_ci(original, variant, 1 - 2 * h["alpha"])
        return {"estimate": drop["drop"], "ci_low": low, "ci_high": high,
                "n": f"{len(original)} / {len(variant)}", "p": drop["p_drop"]}
    if h["test"] == "equivalence":
        margin = (_headroom_margin(h, values) if "margin_headroom" in h
                  else h.get("margin"))
        if margin is None:
            reference = stats.drop_test(_group(values, h, h["margin_of"], "original"),
                                        _group(values, h, h["margin_of"], h["variant"]))
            if not reference["drop"] > 0:
                raise _Untestable(f"{h['margin_of']}'s drop {reference['drop']:.3f} is not "
                                  "positive, so it sets no margin")
            margin = h["margin_fraction"] * reference["drop"]
        result = stats.tost(original, variant, float(margin), h["alpha"])
        return {"margin": result["margin"], "estimate": result["diff"],
                "ci_low": result["ci_low"], "ci_high": result["ci_high"],
                "n": f"{len(original)} / {len(variant)}", "p": result["p"]}
