"""The re-adaptation gate of a manipulation artefact (issue 14 item 5): its verdict on
known trajectories, and one clear error for artefacts it cannot re-adapt. The command runs
end to end in tests/perturbations/test_generate.py on a generated artefact."""

import pytest

from perturbations import artefact, manipulation, references
from perturbations.readapt import gate, readaptation

STEPS = [0, 100, 200, 300, 400]


def test_gate_passes_only_a_lasting_advantage_of_the_modified_data():
    original = [5.0, 5.0, 5.0, 5.0, 5.0]
    # The entangled side gains 4 on the modified data and keeps gaining: passes.
    lasting = gate(STEPS, {"original": original, "modified": [4.0, 3.0, 2.0, 1.5, 1.0]})
    assert lasting["passes"] and lasting["advantage_end"] == pytest.approx(-4.0)
    assert lasting["advantage_rise_second_half"] == pytest.approx(-1.0)   # 1.0 - 2.0
    # The same advantage at the end, but closing over the second half: fails.
    closing = gate(STEPS, {"original": original, "modified": [-5.0, -5.0, -3.0, 0.0, 4.0]})
    assert closing["advantage_end"] < 0 and not closing["passes"]
    # A gap that is low on both arms alike is no advantage of the modified data.
    alike = gate(STEPS, {"original": [1.0] * 5, "modified": [1.0] * 5})
    assert alike["advantage_end"] == 0.0 and not alike["passes"]
    # The texture arm is compared when measured.
    with_texture = gate(STEPS, {"original": original, "modified": [1.0] * 5,
                                "modified_texture": [4.0] * 5})
    assert with_texture["arm_advantage_end"] == {"modified": pytest.approx(-4.0),
                                                 "modified_texture": pytest.approx(-1.0)}


def test_gate_refuses_trajectories_that_do_not_match_the_measurements():
    with pytest.raises(ValueError, match="needs 5 gaps of arm 'modified', found 4"):
        gate(STEPS, {"original": [0.0] * 5, "modified": [0.0] * 4})
    with pytest.raises(ValueError, match=">= 2 measurements"):
        gate([0], {"original": [0.0], "modified": [0.0]})


def _artefact(tmp_path, recorded):
    network = manipulation.manipulation_network(2)
    metadata = {"dataset": "dsprites", "source": "procedural", "factor_sizes": [32, 32],
                "factor_names": ["posX", "posY"], "eps": 0.1,
                "fixed_factors": {"shape": 1, "scale": 5, "orientation": 0}, **recorded}
    return artefact.save_manipulation(tmp_path / "art", network, metadata)


def test_an_artefact_without_its_references_is_refused_in_one_line(tmp_path):
    out = _artefact(tmp_path, {})
    with pytest.raises(artefact.ArtefactError, match="expected metadata references.entangled"):
        readaptation(out, steps=1)
    missing = {"references": {"entangled": [{"run_dir": str(tmp_path / "gone")}],
                              "disentangled": [{"run_dir": str(tmp_path / "gone2")}]}}
    out = _artefact(tmp_path, missing)
    with pytest.raises(references.ReferenceError, match="expected a finished run"):
        readaptation(out, steps=1)
    with pytest.raises(ValueError, match="expected 'original', 'modified'"):
        readaptation(out, steps=1, arms=("modified",))
    with pytest.raises(ValueError, match="arm 'noisy': expected 'original', 'modified', "
                                         "'modified_texture', naive@EPS or VARIANT@EPS"):
        readaptation(out, steps=1, arms=("original", "modified", "noisy"))
    with pytest.raises(ValueError, match="expected VARIANT, VARIANT@EPS with a number"):
        readaptation(out, steps=1, arms=("original", "modified", "noisy@x"))
    for bad in ("naive", "original@0.1", "modified@matched", "odd@0.1"):
        with pytest.raises(ValueError, match=f"arm '{bad}': expected"):
            readaptation(out, steps=1, arms=("original", "modified", bad))
