"""correct: core=pass lru=pass

The reference LRU itself: the seed's exact behaviour, so it conforms to both
profiles. It is the control of the corpus: if it fails, the suite is wrong.
"""

from typing import Any

from policyspec.reference.lru import LRUCachePolicy


class Policy(LRUCachePolicy[Any, Any]):
    pass
