"""Arrow data described in TOML, for tests/bad_inputs/inputs.toml (see its README).

    build_table(spec) -> pa.Table         the columns of one [NAME] entry
    write_input(spec, path)               that table as an Arrow IPC file (or .parquet),
                                          with invalid UTF-8 patched into field names
    parse_type("list<decimal128(20,0)>")  a pyarrow type from the catalogue's spelling
"""

from __future__ import annotations

import datetime as dt
import decimal
import re

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

_SIMPLE = {
    "null": pa.null(), "bool": pa.bool_(),
    "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
    "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(), "uint64": pa.uint64(),
    "float16": pa.float16(), "float32": pa.float32(), "float64": pa.float64(),
    "string": pa.string(), "large_string": pa.large_string(), "string_view": pa.string_view(),
    "binary": pa.binary(), "large_binary": pa.large_binary(),
    "date32": pa.date32(), "date64": pa.date64(),
    "time64[us]": pa.time64("us"), "duration[us]": pa.duration("us"),
}


def _split_top(text: str) -> list[str]:
    """Split on commas outside <> and ()."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def parse_type(text: str) -> pa.DataType:
    text = text.strip()
    if text in _SIMPLE:
        return _SIMPLE[text]
    if m := re.fullmatch(r"fixed_size_binary\[(\d+)\]", text):
        return pa.binary(int(m.group(1)))
    if m := re.fullmatch(r"timestamp\[(s|ms|us|ns)(?:,\s*(.+))?\]", text):
        return pa.timestamp(m.group(1), tz=m.group(2))
    if m := re.fullmatch(r"decimal(128|256)\((\d+),\s*(-?\d+)\)", text):
        make = pa.decimal128 if m.group(1) == "128" else pa.decimal256
        return make(int(m.group(2)), int(m.group(3)))
    if m := re.fullmatch(r"(list|large_list)<(.+)>", text):
        make = pa.list_ if m.group(1) == "list" else pa.large_list
        return make(parse_type(m.group(2)))
    if m := re.fullmatch(r"map<(.+)>", text):
        key, value = _split_top(m.group(1))
        return pa.map_(parse_type(key), parse_type(value))
    if m := re.fullmatch(r"struct<(.*)>", text):
        fields = []
        for part in _split_top(m.group(1)):
            name, _, type_text = part.partition(":")
            fields.append(pa.field(name, parse_type(type_text)))
        return pa.struct(fields)
    if m := re.fullmatch(r"dictionary<(.+)>", text):
        return pa.dictionary(pa.int32(), parse_type(m.group(1)))
    raise ValueError(f"unknown type spelling {text!r}")


def _convert(value, type_: pa.DataType):
    """TOML value -> a Python value pyarrow accepts for `type_`."""
    if value is None:
        return None
    if pa.types.is_binary(type_) or pa.types.is_large_binary(type_) or \
            pa.types.is_fixed_size_binary(type_):
        return bytes.fromhex(value.removeprefix("0x")) if isinstance(value, str) else value
    if pa.types.is_decimal(type_):
        return decimal.Decimal(str(value))
    if pa.types.is_date(type_) and isinstance(value, str):
        return dt.date.fromisoformat(value)
    if pa.types.is_map(type_):
        return [(_convert(k, type_.key_type), _convert(v, type_.item_type)) for k, v in value]
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return [_convert(v, type_.value_type) for v in value]
    if pa.types.is_struct(type_):
        return {type_.field(i).name: _convert(value.get(type_.field(i).name), type_.field(i).type)
                for i in range(type_.num_fields)}
    return value


def _column(spec: dict) -> tuple[pa.Field, pa.Array]:
    type_ = parse_type(spec["type"])
    nullable = spec.get("nullable", True)
    if "values_hex" in spec:
        # Raw bytes for string columns, e.g. invalid UTF-8, bypassing pyarrow's checks.
        raw = [bytes.fromhex(v) if v is not None else None for v in spec["values_hex"]]
        binary = pa.array(raw, pa.binary() if type_ != pa.large_string() else pa.large_binary())
        array = pa.Array.from_buffers(type_, len(binary), binary.buffers(), binary.null_count)
    elif "length" in spec:
        count = int(spec["length"])
        if pa.types.is_integer(type_):
            values = list(range(count))
        elif pa.types.is_string(type_) or pa.types.is_large_string(type_):
            fill = spec.get("fill", "x") * int(spec.get("repeat", 1))
            values = [fill for _ in range(count)]
        else:
            values = [spec.get("fill") for _ in range(count)]
        array = pa.array(values, type_)
    else:
        nulls = set(spec.get("nulls", []))  # TOML has no null: indices of null values
        values = [None if i in nulls else _convert(v, type_)
                  for i, v in enumerate(spec.get("values", []))]
        if pa.types.is_dictionary(type_):
            array = pa.array(values, type_.value_type).dictionary_encode()
        else:
            array = pa.array(values, type_)
    name = spec.get("name", "") * int(spec.get("name_repeat", 1))
    return pa.field(name, array.type, nullable=nullable), array


def build_table(spec: dict) -> pa.Table:
    fields, arrays = [], []
    for column in spec.get("columns", []):
        field, array = _column(column)
        fields.append(field)
        arrays.append(array)
    if not fields:
        return pa.Table.from_batches([], schema=pa.schema([]))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def write_input(spec: dict, path) -> None:
    """Write the table; `name_hex` of a column replaces that field's name by raw bytes
    (a same-length placeholder is written, then patched in the file)."""
    table = build_table(spec)
    if str(path).endswith(".parquet"):
        pq.write_table(table, path)
        return
    with ipc.new_file(str(path), table.schema) as writer:
        if table.num_rows or table.num_columns:
            writer.write_table(table)
    patches = []
    for column in spec.get("columns", []):
        if "name_hex" in column:
            raw = bytes.fromhex(column["name_hex"])
            placeholder = column.get("name", "")
            if len(placeholder.encode()) != len(raw):
                raise ValueError("name_hex needs a `name` placeholder of the same byte length")
            patches.append((placeholder.encode(), raw))
    if patches:
        data = open(path, "rb").read()
        for old, new in patches:
            if old not in data:
                raise ValueError(f"placeholder {old!r} not found in {path}")
            data = data.replace(old, new)
        open(path, "wb").write(data)
