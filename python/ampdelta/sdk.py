"""Registration into the Amp Python SDK (docs/sdk-loaders.md).

    import ampdelta.sdk
    ampdelta.sdk.register()                     # once, after the SDK is importable
    client = amp.Client(url)
    client.configure_connection('lake', 'ampdelta', {'table_path': './data/blocks'})

The SDK's client, auth, admin API and registry stay; only the writer is ampdelta's. The SDK
resolves loaders by name in `amp.loaders.registry.LoaderRegistry` and builds them as
`cls(config, label_manager=...)`; the registered class is a DataLoader subclass whose every
method is DeltaLakeLoader's.
"""

from __future__ import annotations

import sys
from typing import Any, Optional

from .loaders.deltalake import DeltaLakeLoader

LOADER_NAME = "ampdelta"


def _sdk():
    try:
        from amp.loaders.base import DataLoader
        from amp.loaders.registry import LoaderRegistry
    except ImportError as error:
        raise ImportError(
            "ampdelta.sdk.register() needs the Amp Python SDK (the 'amp' package of "
            "edgeandnode/amp-python) importable; without it, use ampdelta.Client, which "
            f"has the SDK's API: {error}") from error
    return DataLoader, LoaderRegistry


def _calling_sdk_query() -> Optional[str]:
    """The query of the SDK's `Client.query_and_load_streaming` that is handing a stream
    to this loader (a frame up the stack), or None. The SDK passes the loader its items,
    not the query; the query is what a stream's progress belongs to."""
    frame = sys._getframe(1)
    for _ in range(64):
        if frame is None:
            return None
        if (frame.f_code.co_name == "query_and_load_streaming"
                and frame.f_globals.get("__name__", "").startswith("amp.")):
            query = frame.f_locals.get("query")
            return query if isinstance(query, str) else None
        frame = frame.f_back
    return None


def loader_class() -> type:
    """DeltaLakeLoader as a subclass of the SDK's DataLoader (the registry accepts only
    those), its methods first in the MRO."""
    data_loader, _ = _sdk()

    class AmpDeltaLoader(DeltaLakeLoader, data_loader):
        def __init__(self, config: Any, label_manager: Any = None):
            DeltaLakeLoader.__init__(self, config, label_manager=label_manager)

        def load_stream_continuous(self, stream_iterator: Any, table_name: str,
                                   connection_name: Optional[str] = None,
                                   worker_id: int = 0, **kwargs):
            # Runs at the first next(), from inside the SDK's call: its query names the
            # stream, as ampdelta.Client's does.
            if not kwargs.get("query"):
                kwargs["query"] = _calling_sdk_query()
            yield from DeltaLakeLoader.load_stream_continuous(
                self, stream_iterator, table_name, connection_name, worker_id, **kwargs)

        def _load_batch_impl(self, batch: Any, table_name: str, **kwargs) -> int:
            # The SDK's hook for its own load_batch loop; ours writes the batch natively.
            result = DeltaLakeLoader.load_batch(self, batch, table_name, **kwargs)
            if not result.success:
                raise RuntimeError(result.error)
            return result.rows_loaded

    AmpDeltaLoader.__qualname__ = AmpDeltaLoader.__name__
    return AmpDeltaLoader


def register(name: str = LOADER_NAME) -> type:
    """Register ampdelta's loader in the SDK under `name` ('ampdelta'); returns the class.
    A connection configured with that loader name then writes through the engine."""
    _, registry = _sdk()
    cls = loader_class()
    registry.register(name, cls)
    return cls
