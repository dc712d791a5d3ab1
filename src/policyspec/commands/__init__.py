"""Subcommands of the ``policyspec`` CLI, one module each."""
