"""``python -m policyspec``: the same as the ``policyspec`` command."""

import sys

from policyspec.cli import main

sys.exit(main())
