"""A method trained in another framework, audited end to end (issue 29 item 5): `python -m
benchmark.audit export` writes each arm's images, a method that uses no TensorFlow
(scikit-learn's FastICA on a PCA of the pixels) writes one codes file per arm and seed,
and `python -m benchmark.audit score` checks, scores and decides."""

import json
import subprocess
import sys

import numpy as np
import pytest

from benchmark.studies import external
from tests.benchmark_core.test_audit import GEOMETRY, _geometry_reference
from tests.cli import ROOT, environment, python_m

#: the user's side (numpy and scikit-learn only; it checks that TensorFlow was never imported)
METHOD = ROOT / "examples" / "fastica_codes.py"


@pytest.mark.slow
def test_export_codes_from_elsewhere_and_score(tmp_path):
    reference = _geometry_reference(tmp_path / "reference")
    export_dir = tmp_path / "export"
    exported = python_m("benchmark.audit", "export", f"--out={export_dir}",
                        f"--reference={reference}", "--seeds=0,1")
    assert exported.returncode == 0, exported.stderr[-3000:]
    manifest = json.loads((export_dir / "manifest.json").read_text())
    assert sorted(manifest["arms"]) == sorted(GEOMETRY) and manifest["seeds"] == [0, 1]
    wave = manifest["arms"]["wave@0.3"]
    with np.load(export_dir / wave["file"], allow_pickle=False) as f:
        images = f["imgs"]
        assert images.shape == (1024, 64, 64) and images.dtype == np.float16
        levels = np.unique(images)                           # grey levels k / 255, not 0/1
        assert len(levels) > 2 and np.allclose(levels * 255, np.rint(levels * 255), atol=0.1)
    with np.load(export_dir / manifest["arms"]["original"]["file"], allow_pickle=False) as f:
        assert set(np.unique(f["imgs"])) <= {0, 1} and f["imgs"].dtype == np.float16
        classes, values = f["latents_classes"], f["latents_values"]
    # one dtype and scale for every arm, the official six factor columns, and what varies
    images = manifest["images"]
    assert images["dtype"] == "float16" and images["range"] == [0, 1]
    assert images["factor_names"] == ["color", "shape", "scale", "orientation", "posX",
                                      "posY"]
    assert images["varying_factors"] == ["posX", "posY"]
    assert images["fixed_factors"] == {"shape": 1, "scale": 5, "orientation": 0}
    assert images["factor_sizes"] == [1, 1, 1, 1, 32, 32]
    assert classes.shape == (1024, 6) and (classes[:, :4] == 0).all()
    assert values[0, 1] == 2.0 and values[0, 2] == 1.0     # an ellipse at the largest scale
    assert "run.steps = 4" in manifest["protocol"]["bindings"] or any(
        "run.steps" in b for b in manifest["protocol"]["bindings"])
    assert "at least 2 seeds" not in exported.stderr

    out = tmp_path / "audit"
    early = python_m("benchmark.audit", "score", f"--export={export_dir}", "--name=ica",
                     f"--output_dir={out}")
    assert early.returncode == 2 and "missing 10" in early.stderr.strip().splitlines()[-1]

    method = subprocess.run([sys.executable, str(METHOD), str(export_dir)], cwd=tmp_path,
                            env=environment(), capture_output=True, text=True, timeout=600)
    assert method.returncode == 0 and "wrote 10 codes files" in method.stdout, \
        method.stderr[-2000:]
    scored = python_m("benchmark.audit", "score", f"--export={export_dir}", "--name=ica",
                      f"--output_dir={out}", timeout=900)
    assert scored.returncode == 0, scored.stderr[-3000:]
    assert scored.stdout.strip().splitlines()[-1] == str(out / "audit.md")
    result = json.loads((out / "audit.json").read_text())
    assert result["model_name"] == "ica" and result["arms"][1] == "wave@0.3"
    runs = sorted(p.parent.name for p in (out / "runs").glob("*/results.json"))
    assert runs == sorted(f"ica_dsprites_{v}_seed{s}" for v in GEOMETRY for s in (0, 1))
    mechanism = {(r["model"], r["arm"]): r for r in result["mechanism"]}
    mig = mechanism[("ica", "original")]["MIG"]
    assert mig["n"] == 2 and 0.0 <= mig["mean"] <= 1.0
    assert result["method_drops"]["wave@0.3"]["n_original"] == 2
    assert "Verdict:" in (out / "audit.md").read_text()
    # codes from files carry no posterior variances: over-pruning unknown, not "0/2"
    assert "| **ica** | unknown: codes scored from files" in (out / "audit.md").read_text()
    assert result["overpruning"]["method"] is None
    full_report = (out / "report" / "report.md").read_text()
    assert "Over-pruning is unknown for 10 run(s)" in full_report
    assert "No run is over-pruned" not in full_report

    # scoring again keeps the runs scored from the same codes and settings, and scores a
    # run whose codes file changed
    stamps = {p: p.stat().st_mtime_ns for p in (out / "runs").glob("*/results.json")}
    again = python_m("benchmark.audit", "score", f"--export={export_dir}", "--name=ica",
                     f"--output_dir={out}")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "10 run(s) already scored from the same codes and settings: kept" in again.stdout
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    changed_codes = export_dir / "codes" / "wave@0.3" / "seed1.npz"
    with np.load(changed_codes, allow_pickle=False) as f:
        np.savez(changed_codes, codes=f["codes"][:, ::-1].copy())
    redone = python_m("benchmark.audit", "score", f"--export={export_dir}", "--name=ica",
                      f"--output_dir={out}")
    assert redone.returncode == 0 and "9 run(s) already scored" in redone.stdout
    rescored = [p for p in stamps if p.stat().st_mtime_ns != stamps[p]]
    assert [p.parent.name for p in rescored] == ["ica_dsprites_wave@0.3_seed1"]
    # a scored run whose evaluation codes are gone (git does not keep them) is scored again:
    # the verdict's turn is measured on them
    (out / "runs" / "ica_dsprites_original_seed0" / "eval_codes.npz").unlink()
    restored = python_m("benchmark.audit", "score", f"--export={export_dir}", "--name=ica",
                        f"--output_dir={out}")
    assert restored.returncode == 0 and "9 run(s) already scored" in restored.stdout
    assert (out / "runs" / "ica_dsprites_original_seed0" / "eval_codes.npz").is_file()

    # a directory of trained runs is not mixed with scored codes
    (tmp_path / "trained" / "runs" / "x").mkdir(parents=True)
    (tmp_path / "trained" / "runs" / "x" / "fingerprint.json").write_text("{}")
    mixed = python_m("benchmark.audit", "score", f"--export={export_dir}", "--name=ica",
                     f"--output_dir={tmp_path / 'trained'}")
    assert mixed.returncode == 2 and "holds runs the audit trained" in mixed.stderr
    # a codes file of the wrong shape is one line naming it, exit 2
    np.savez(export_dir / "codes" / "wave@0.3" / "seed1.npz", codes=np.zeros((10, 2)))
    bad = python_m("benchmark.audit", "score", f"--export={export_dir}", "--name=ica2",
                   f"--output_dir={tmp_path / 'audit2'}")
    assert bad.returncode == 2
    assert "expected codes of shape (1024, d)" in bad.stderr.strip().splitlines()[-1]
    # images that are not the exported ones (the reference's data changed) are refused
    np.savez(export_dir / "codes" / "wave@0.3" / "seed1.npz", codes=np.zeros((1024, 2)))
    manifest["arms"]["wave@0.3"]["pixels_digest"] = "0" * 32
    (export_dir / "manifest.json").write_text(json.dumps(manifest))
    changed = python_m("benchmark.audit", "score", f"--export={export_dir}", "--name=ica3",
                       f"--output_dir={tmp_path / 'audit3'}")
    assert changed.returncode == 2
    assert "images are not the ones the reference makes now" in changed.stderr
    # a codes file cut in half, then an exported arm file replaced: one line each
    manifest["arms"]["wave@0.3"]["pixels_digest"] = wave["pixels_digest"]
    (export_dir / "manifest.json").write_text(json.dumps(manifest))
    codes_file = export_dir / "codes" / "wave@0.3" / "seed1.npz"
    codes_file.write_bytes(codes_file.read_bytes()[: codes_file.stat().st_size // 2])
    cut = python_m("benchmark.audit", "score", f"--export={export_dir}", "--name=ica4",
                   f"--output_dir={tmp_path / 'audit4'}")
    assert cut.returncode == 2 and "Traceback" not in cut.stderr, cut.stderr[-2000:]
    assert "truncated or corrupt" in cut.stderr.strip().splitlines()[-1]
    np.savez(codes_file, codes=np.zeros((1024, 2)))
    arm_file = export_dir / wave["file"]
    arm_file.write_bytes(arm_file.read_bytes() + b"\0")
    replaced = python_m("benchmark.audit", "score", f"--export={export_dir}", "--name=ica5",
                        f"--output_dir={tmp_path / 'audit5'}")
    assert replaced.returncode == 2, replaced.stderr[-2000:]
    assert "SHA-256 is not the one the export recorded" in replaced.stderr.splitlines()[-1]
    assert not (tmp_path / "audit4").exists() and not (tmp_path / "audit5").exists()


def test_codes_files_are_checked(tmp_path):
    path = tmp_path / "c.npz"
    np.savez(path, codes=np.ones((4, 2)))
    assert external.read_codes(path, 4).shape == (4, 2)
    with pytest.raises(ValueError, match=r"expected codes of shape \(5, d\)"):
        external.read_codes(path, 5)
    np.savez(path, codes=np.array([[1.0, np.nan], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="NaN/inf"):
        external.read_codes(path, 2)
    for odd in (np.ones((4, 2)) * (1 + 1j), np.ones((4, 2), dtype="timedelta64[s]"),
                np.ones((4, 2), dtype=bool)):
        np.savez(path, codes=odd)
        with pytest.raises(ValueError, match="expected numeric codes"):
            external.read_codes(path, 4)
    np.savez(path, codes=np.zeros((4, 2_000_000), dtype=np.float16))
    with pytest.raises(ValueError, match="more than the limit"):
        external.read_codes(path, 4)
    np.savez(path, codes=np.ones((4, 2)))
    half = path.read_bytes()[: path.stat().st_size // 2]
    path.write_bytes(half)
    with pytest.raises(ValueError, match="truncated or corrupt"):
        external.read_codes(path, 4)
    path.write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(ValueError, match="no .npz archive") as refused:
        external.read_codes(path, 4)
    assert "allow_pickle" not in str(refused.value)
    np.savez(path, other=np.ones(3))
    with pytest.raises(ValueError, match="the arrays 'codes'"):
        external.read_codes(path, 3)
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object))
    (tmp_path / "objects.npy").rename(tmp_path / "o.npz")
    with pytest.raises(ValueError, match="only by unpickling"):
        external.read_codes(tmp_path / "o.npz", 1)
    with pytest.raises(FileNotFoundError, match="manifest.json"):
        external.read_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"arms": {}, "seeds": [0],
                                                        "reference": "r"}))
    with pytest.raises(ValueError, match="expected 'reference'"):
        external.read_manifest(tmp_path)
