"""The conformance suite: one pytest module per spec section (spec/<name>.md)."""
