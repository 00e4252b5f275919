"""ArmLabel: the one parser of 'VARIANT@STRENGTH' labels."""

import pytest

from benchmark.core.arm_label import ArmLabel, base_of


def test_a_label_splits_into_its_variant_and_strength():
    assert ArmLabel.parse("wave@0.30") == ArmLabel("wave", "0.30")
    assert ArmLabel.parse("wave@0.30").eps == 0.3
    assert ArmLabel.parse("wave@0.30").shown() == "wave@0.3"
    assert str(ArmLabel.parse("wave@0.30")) == "wave@0.30"
    assert ArmLabel.parse("original") == ArmLabel("original")
    assert ArmLabel.parse("original").eps is None
    assert base_of("noisy@matched") == "noisy"


def test_a_strength_that_is_not_a_number_names_the_label():
    with pytest.raises(ValueError, match=r"'wave@x'.*number EPS.*'x'"):
        _ = ArmLabel.parse("wave@x").eps
    with pytest.raises(ValueError, match="readaptation arm 'noisy@x'"):
        from perturbations.readapt import check_arm
        check_arm("noisy@x")
