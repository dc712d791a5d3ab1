"""The versions a report, a history or a vector file carries: the package's,
and the normative text's in spec/ (spec/CHANGELOG.md says what changed)."""

__all__ = ["SPEC_VERSION", "__version__"]

__version__ = "0.1.0"
SPEC_VERSION = "1.2.0"
"""Version of the normative text in spec/; reports carry it."""
