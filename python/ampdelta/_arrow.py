"""Arrow data in and out of the extension through the Arrow PyCapsule interface only.

The extension carries its own Arrow C++; pyarrow is never required. Results are pyarrow
objects when pyarrow (14 or later) is importable, else objects that export an Arrow C
stream (`__arrow_c_stream__`), which Polars, DuckDB, arro3 and pyarrow all read. Inputs are
anything that exports a C stream or a record batch (`__arrow_c_array__`).
"""

import functools
from typing import Any, Optional

from . import _native
from ._errors import InvalidInputError, raise_if_error

# pyarrow 14 is the first to implement the PyCapsule interface.
_PYARROW_MIN_MAJOR = 14


@functools.lru_cache(maxsize=None)
def pyarrow_module() -> Optional[Any]:
    """pyarrow when it is installed and new enough to exchange capsules, else None."""
    try:
        import pyarrow
    except ImportError:
        return None
    try:
        major = int(str(pyarrow.__version__).split(".")[0])
    except ValueError:
        return None
    return pyarrow if major >= _PYARROW_MIN_MAJOR else None


class ArrowStream:
    """A result read batch by batch, exported once through `__arrow_c_stream__`
    (`pyarrow.RecordBatchReader.from_stream(s)`, `polars.DataFrame(s)`, `duckdb`…)."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __arrow_c_stream__(self, requested_schema=None):
        # The producer may give its own schema instead of a requested one.
        capsule, self._capsule = self._capsule, None
        if capsule is None:
            raise InvalidInputError("this Arrow stream was already read")
        return capsule

    def __iter__(self):
        """The batches, each an ArrowTable (the stream is read as it goes)."""
        reader, error = _native.read_stream(self.__arrow_c_stream__())
        raise_if_error(error)
        while True:
            held, error = reader.next()
            raise_if_error(error)
            if held is None:
                return
            yield ArrowTable(held)

    def read_all(self) -> "ArrowTable":
        """The rest of the stream, held by the extension as an ArrowTable."""
        held, error = _native.collect_stream(self.__arrow_c_stream__())
        raise_if_error(error)
        return ArrowTable(held)


class ArrowTable:
    """A table held by the extension, exported as a new C stream on each request, so any
    number of consumers may read it."""

    def __init__(self, held):
        self._held = held

    @property
    def num_rows(self) -> int:
        return self._held.num_rows

    def __len__(self) -> int:
        return self._held.num_rows

    @property
    def column_names(self):
        return list(self._held.column_names)

    def __repr__(self) -> str:
        return f"ampdelta.ArrowTable({self.num_rows} rows)\n{self._held.schema_text}"

    def __arrow_c_stream__(self, requested_schema=None):
        capsule, error = self._held.export_stream()
        raise_if_error(error)
        return capsule

    def __arrow_c_schema__(self):
        capsule, error = self._held.export_schema()
        raise_if_error(error)
        return capsule


def reader_from_capsule(capsule):
    """A query's stream capsule as a pyarrow.RecordBatchReader, or an ArrowStream."""
    pa = pyarrow_module()
    if pa is None:
        return ArrowStream(capsule)
    from_stream = getattr(pa.RecordBatchReader, "from_stream", None)
    if from_stream is not None:  # pyarrow 15+
        return from_stream(ArrowStream(capsule))
    return pa.RecordBatchReader._import_from_c_capsule(capsule)


def stream_capsule(data: Any, what: str = "load_table()"):
    """An "arrow_array_stream" capsule of `data`: anything exporting a C stream (pyarrow
    Table/RecordBatchReader/RecordBatch, Polars, DuckDB, arro3) or a record batch; a pandas
    DataFrame or a list of batches through pyarrow when it is installed."""
    if hasattr(data, "__arrow_c_stream__"):
        return data.__arrow_c_stream__()
    if hasattr(data, "__arrow_c_array__"):
        schema_capsule, array_capsule = data.__arrow_c_array__()
        capsule, error = _native.stream_from_array(schema_capsule, array_capsule)
        raise_if_error(error)
        return capsule
    pa = pyarrow_module()
    if pa is not None:
        converted = _through_pyarrow(pa, data)
        if converted is not None:
            return stream_capsule(converted, what)
    raise InvalidInputError(
        f"{what} needs Arrow data: an object with __arrow_c_stream__ or __arrow_c_array__ "
        f"(a pyarrow Table, RecordBatch or RecordBatchReader, a Polars DataFrame, a DuckDB "
        f"relation; a pandas DataFrame with pyarrow installed), got "
        f"{type(data).__module__}.{type(data).__qualname__}")


def _through_pyarrow(pa, data):
    """pyarrow's view of data that does not speak the capsule interface itself, or None."""
    if type(data).__module__.startswith("pandas") and hasattr(data, "columns"):
        return pa.Table.from_pandas(data, preserve_index=False)
    if isinstance(data, (list, tuple)) and data and all(
            isinstance(item, pa.RecordBatch) for item in data):
        return pa.Table.from_batches(list(data))
    return None
