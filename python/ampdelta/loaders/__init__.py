"""The SDK's loader API on ampdelta's engine (docs/sdk-loaders.md).

    from ampdelta.loaders import DeltaLakeLoader   # was: from amp.loaders... import DeltaLakeLoader

Code written against the SDK's `DataLoader` contract works unchanged; each call keeps
ampdelta's guarantees (one commit per load_table, every mode, a failure leaves the table).
"""

from .._results import BlockRange, LoadMode, LoadResult
from .deltalake import DeltaLakeLoader

__all__ = ["BlockRange", "DeltaLakeLoader", "LoadMode", "LoadResult"]
