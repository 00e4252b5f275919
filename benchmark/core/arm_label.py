"""A study arm's label: a dataset variant with an optional strength.

'original', 'wave@0.3', 'noisy@0.3675', readaptation's 'noisy@matched'. The base is the
`data.variant`, the strength the text after '@' ('' when none: the variant's default). One
parser for every module that reads a label, so that 'wave@0.30' and 'wave@0.3' name the
same strength everywhere (`shown`). This module imports nothing of the suite.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class ArmLabel:
    """`base`: the variant's name; `strength`: the text after '@', '' when none."""
    base: str
    strength: str = ""

    @classmethod
    def parse(cls, text: str) -> "ArmLabel":
        base, _, strength = str(text).partition("@")
        return cls(base, strength)

    @property
    def eps(self) -> float | None:
        """The strength as a number, None when the label has none; ValueError naming the
        label when it is not a number ('noisy@matched', 'wave@x')."""
        if not self.strength:
            return None
        try:
            return float(self.strength)
        except ValueError:
            raise ValueError(f"arm {str(self)!r}: expected VARIANT or VARIANT@EPS with a "
                             f"number EPS, found strength {self.strength!r}") from None

    def shown(self) -> str:
        """'base@eps' with eps as :g writes it ('wave@0.30' -> 'wave@0.3'), or the base."""
        return f"{self.base}@{self.eps:g}" if self.strength else self.base

    def __str__(self) -> str:
        return f"{self.base}@{self.strength}" if self.strength else self.base


def base_of(text: str) -> str:
    """The variant of a label: 'wave@0.3' -> 'wave', 'original' -> 'original'."""
    return ArmLabel.parse(text).base
