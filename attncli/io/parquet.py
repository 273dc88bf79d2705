"""A records document as Parquet (the `parquet` extra: pip install 'attncli[parquet]', which brings pyarrow).

The rows are the table, one column per key, typed by pyarrow from the values (a column that is None in
every row is a null column); the rest of the document (schema, model, corpus, config, definitions) rides
along as JSON in the file's key-value metadata under `attncli`, so that
`pyarrow.parquet.read_schema(path).metadata[b"attncli"]` gives it back. pandas, polars and DuckDB read the
rows directly.
"""

from __future__ import annotations

from typing import BinaryIO

from attncli.errors import ConfigError
from attncli.io.documents import Records
from attncli.io.encode import dumps


def write_parquet(records: Records, stream: BinaryIO, precision: int | None = None) -> None:
    """The rows, exact (never rounded: Parquet stores float64), with the document's other fields as metadata."""
    try:
        import pyarrow as pa  # late: optional (pyarrow, the parquet extra: only for -f parquet)
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError("-f parquet needs pyarrow: pip install 'attncli[parquet]'") from None
    meta = {key: value for key, value in records.doc.items() if key != "rows"}
    table = pa.Table.from_pylist(records.doc["rows"])
    table = table.replace_schema_metadata({"attncli": dumps(meta, allow_nan=False)})
    pq.write_table(table, stream)
