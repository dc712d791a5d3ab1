"""The one private thing policyspec relies on in Hypothesis, checked so
that an upgrade that removes it fails here, loudly, instead of letting
shrinking run unbounded (minutes where the quick budget promises 20 s).

Hypothesis has no public setting for how long or how often it shrinks;
``engines/stateful._shrinking_for`` bounds both through the two module
constants below.
"""

from hypothesis.internal.conjecture import engine as conjecture_engine


def test_hypothesis_still_has_the_shrinking_bounds_policyspec_sets() -> None:
    for name in ("MAX_SHRINKS", "MAX_SHRINKING_SECONDS"):
        assert isinstance(getattr(conjecture_engine, name, None), int), (
            f"hypothesis.internal.conjecture.engine.{name} is gone: "
            "engines/stateful._shrinking_for no longer bounds shrinking; find the new knob"
        )
