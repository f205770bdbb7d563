"""The SDK's result types (amp-protocol.md §3.2), built from the engine's JSON events."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, List, Optional


class LoadMode(Enum):
    APPEND = "append"
    OVERWRITE = "overwrite"
    UPSERT = "upsert"
    MERGE = "merge"


@dataclass
class BlockRange:
    network: str
    start: int
    end: int
    hash: Optional[str] = None
    prev_hash: Optional[str] = None


@dataclass
class LoadResult:
    rows_loaded: int
    duration: float
    ops_per_second: float
    table_name: str
    loader_type: str
    success: bool
    error: Optional[str] = None
    metadata: Dict[str, Any] = field(default_factory=dict)
    is_reorg: bool = False
    invalidation_ranges: Optional[List[BlockRange]] = None

    def __str__(self) -> str:
        if self.is_reorg:
            return f"🔄 Reorg detected: {len(self.invalidation_ranges or [])} ranges invalidated"
        if self.success:
            return f"✅ Loaded {self.rows_loaded} rows to {self.table_name} in {self.duration:.2f}s"
        return f"❌ Failed to load to {self.table_name}: {self.error}"


_INTEGER = re.compile(r"-?[0-9]{1,18}")


def _typed(value: Any) -> Any:
    """Numbers and booleans arrive typed, as the SDK's are; text that holds an integer or
    a boolean (a value an older engine sent as text) is typed too."""
    if not isinstance(value, str):
        return value
    if _INTEGER.fullmatch(value):
        return int(value)
    if value in ("true", "false"):
        return value == "true"
    return value


def result_from(body: dict) -> LoadResult:
    metadata = {key: _typed(value) for key, value in body["metadata"].items()}
    progress = body.get("progress", {})
    if progress.get("batch_index", -1) >= 0:
        metadata.setdefault("batch_index", progress["batch_index"])
        metadata.setdefault("total_rows", progress["total_rows"])
    if progress.get("block_ranges"):
        metadata.setdefault("block_ranges", progress["block_ranges"])
    ranges = [BlockRange(r["network"], r["start"], r["end"])
              for r in body.get("invalidation_ranges", [])]
    return LoadResult(
        rows_loaded=body["rows_loaded"], duration=body["duration"],
        ops_per_second=body["ops_per_second"], table_name=body["table_name"],
        loader_type=body["loader_type"], success=body["success"],
        error=body["error"] or None, metadata=metadata, is_reorg=body["is_reorg"],
        invalidation_ranges=ranges if body["is_reorg"] else None)
