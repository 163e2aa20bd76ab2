"""Data sources: the file format from the extension, and opening a file or directory as an Arrow dataset."""

from __future__ import annotations

import bz2
import gzip
import os
import re
from pathlib import Path
from typing import Sequence

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as pads
import pyarrow.fs as pafs

from metrics_core.dataset.location import filesystem_of, is_url, store_error
from metrics_core.errors import InputError

__all__ = ["CSV_SEPARATORS", "FORMATS", "csv_format", "format_of", "open_dataset", "schema_of", "where"]

#: File extension -> pyarrow dataset format.
FORMATS = {".parquet": "parquet", ".pq": "parquet", ".parq": "parquet", ".arrow": "ipc", ".feather": "ipc",
           ".ipc": "ipc", ".csv": "csv", ".tsv": "csv"}


def format_of(path: Path | str) -> str:
    """The pyarrow format of a data file, from its extension (a compression suffix is skipped).

    Parameters
    ----------
    path : path or str

    Returns
    -------
    str
        "parquet", "ipc" or "csv".

    Raises
    ------
    InputError
        An extension that names no supported format.

    Examples
    --------
    >>> format_of("a/b.parquet"), format_of("x.feather"), format_of("rows.csv.gz")
    ('parquet', 'ipc', 'csv')
    """
    path = Path(path)
    for s in reversed([s.lower() for s in path.suffixes]):
        if s in FORMATS:
            return FORMATS[s]
        if s not in (".gz", ".bz2", ".zst"):
            break
    raise InputError(f"{path}: cannot tell the file format from the extension {path.suffix!r}. "
                     f"Use one of {sorted(FORMATS)} (Parquet, Arrow IPC/Feather, CSV).")


def _data_files(path: Path) -> tuple[str, list[str]]:
    """(format, sorted data files) of a directory, recursing into hive partition folders.

    Files and folders whose names start with "." or "_" (``_SUCCESS``, ``.crc``) are skipped, and
    so is any file without a data extension (a README or a PNG beside the data is no error).
    """
    found: dict[str, list[str]] = {}
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        for name in sorted(files):
            if name.startswith((".", "_")):
                continue
            try:
                fmt = format_of(name)
            except InputError:
                continue
            found.setdefault(fmt, []).append(os.path.join(root, name))
    if not found:
        raise InputError(f"{path}: the directory holds no Parquet, Arrow IPC/Feather or CSV file "
                         f"(looked for extensions {sorted(FORMATS)}).")
    if len(found) > 1:
        raise InputError(f"{path}: the directory mixes file formats {sorted(found)}; put one format per dataset.")
    fmt, files = found.popitem()
    return fmt, files


#: Field separators a CSV's header line is tried for, in this order when counts tie.
CSV_SEPARATORS = (",", ";", "\t", "|")
_DECIMAL_COMMA = re.compile(r"^\s*-?\d+,\d+\s*\Z")


def _first_lines(path: str, n: int, filesystem: pafs.FileSystem | None = None) -> list[str]:
    if filesystem is not None:
        try:
            with filesystem.open_input_stream(path, compression="detect") as f:
                head = f.read(1 << 16)
        except (OSError, pa.ArrowException):
            return []
        return head.decode("utf-8-sig", errors="replace").splitlines(keepends=True)[:n]
    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(Path(path).suffix.lower(), open)
    try:
        with opener(path, "rt", encoding="utf-8-sig", errors="replace") as f:
            return [f.readline() for _ in range(n)]
    except OSError:  # unreadable or an unsupported compression: let Arrow report it
        return []


def csv_format(path: str, filesystem: pafs.FileSystem | None = None):
    r"""The Arrow CSV format of a text file: its field separator and decimal mark.

    ``filesystem``: where ``path`` is (None: on disk), e.g. an object store's.

    A ``.tsv`` file is tab-separated. Otherwise the separator is the one of ``CSV_SEPARATORS``
    that the header line holds most often (a spreadsheet saved in a continental European locale
    writes ``label;score`` and ``1;0,9``). With a separator other than the comma, a field written
    as ``0,9`` in the first 50 data rows means a decimal comma. A comma-separated file is read as
    Arrow reads CSV by default (returns ``"csv"``).

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "rows.csv"
    >>> _ = path.write_text("label;score\n1;0,9\n")
    >>> fmt = csv_format(str(path))
    >>> fmt.parse_options.delimiter, fmt.default_fragment_scan_options.convert_options.decimal_point
    (';', ',')
    """
    lines = _first_lines(path, 51, filesystem)
    header = lines[0] if lines else ""
    if ".tsv" in [s.lower() for s in Path(path).suffixes]:
        sep = "\t"
    else:
        sep = max(CSV_SEPARATORS, key=lambda c: (header.count(c), -CSV_SEPARATORS.index(c)))
        if header.count(sep) == 0:
            sep = ","
    if sep == ",":
        return "csv"
    fields = [field for line in lines[1:] for field in line.rstrip("\r\n").split(sep)]
    decimal = "," if any(_DECIMAL_COMMA.match(field) for field in fields) else "."
    return pads.CsvFileFormat(parse_options=pacsv.ParseOptions(delimiter=sep),
                              convert_options=pacsv.ConvertOptions(decimal_point=decimal))


def open_dataset(source, *, schema: pa.Schema | None = None, files: Sequence[str] | None = None) -> pads.Dataset:
    """Open ``source`` as a :class:`pyarrow.dataset.Dataset` without reading rows.

    Parameters
    ----------
    source : str, path or pyarrow.dataset.Dataset
        A Parquet file, a directory of Parquet files (hive partitions such as ``period=2026-03/``
        become columns), an object-store URL of either (``s3://bucket/prefix/``, ``gs://...``:
        :func:`~metrics_core.dataset.location.filesystem_of`),
        an Arrow IPC/Feather file (``.arrow``, ``.feather``, ``.ipc``), a CSV
        file (``.csv``, ``.csv.gz``), or an opened Dataset (returned as is). The format comes
        from the extension (of the files inside, for a directory; other files are ignored).
    schema : pyarrow.Schema, optional
        Overrides the schema inferred from the first file.
    files : sequence of str, optional
        Restricts a directory to some of its files (keeping the hive partition columns).

    Returns
    -------
    pyarrow.dataset.Dataset

    Raises
    ------
    InputError
        A missing path, an unknown extension, a directory mixing formats or a file that cannot
        be read, naming the path; for a URL also a missing bucket, missing credentials or a
        denied read, naming the URL and what to set (:func:`~metrics_core.dataset.location.store_error`).

    Examples
    --------
    >>> import tempfile, pyarrow.parquet as pq
    >>> path = Path(tempfile.mkdtemp()) / "d.parquet"
    >>> pq.write_table(pa.table({"label": [0, 1]}), path)
    >>> open_dataset(path).schema.names
    ['label']
    """
    if isinstance(source, pads.Dataset):
        return source
    if is_url(source):
        return _open_url(source, schema, files)
    if hasattr(source, "mapInArrow") and hasattr(source, "sparkSession"):  # by its methods: no pyspark here
        raise InputError("a Spark DataFrame is read on its own session: call "
                         "flows.compute_stats.compute_stats(df, task, columns), which computes the same statistics "
                         "partition by partition on Spark (docs/large-data.md, 'Spark').")
    path = Path(source)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory. Check the data path (relative paths are "
                         f"resolved from {Path.cwd()}).")
    if path.is_dir():
        fmt, found = _data_files(path)
        target = [str(f) for f in files] if files is not None else found
        options = dict(partitioning="hive", partition_base_dir=str(path))
    else:
        fmt, target, options = format_of(path), str(path), {}
    if fmt == "csv" and target:
        fmt = csv_format(target if isinstance(target, str) else target[0])
    try:
        return pads.dataset(target, format=fmt, schema=schema, **options)
    except (pa.ArrowException, OSError, ValueError) as exc:
        kind = fmt if isinstance(fmt, str) else "csv"
        raise InputError(f"{path}: cannot be read as {kind} data: {exc}") from None


def _open_url(url: str, schema: pa.Schema | None, files: Sequence[str] | None) -> pads.Dataset:
    """:func:`open_dataset` of an object-store URL: an object, or a prefix read as a directory."""
    fs, path = filesystem_of(url)
    try:
        kind = fs.get_file_info(path).type
        if kind == pafs.FileType.NotFound and fs.get_file_info(path.split("/", 1)[0]).type == pafs.FileType.NotFound:
            raise OSError(f"Bucket '{path.split('/', 1)[0]}' not found")
    except (OSError, pa.ArrowException) as exc:
        raise store_error(url, exc) from None
    if kind == pafs.FileType.NotFound:
        raise InputError(f"{url}: no such object or prefix in the bucket. Check the path (a prefix is read as a "
                         "directory of data files).")
    if kind == pafs.FileType.Directory:
        fmt, found = _url_data_files(fs, path, url)
        target = [str(f) for f in files] if files is not None else found
        options = dict(partitioning="hive", partition_base_dir=path)
    else:
        fmt, target, options = format_of(path), path, {}
    if fmt == "csv" and target:
        fmt = csv_format(target if isinstance(target, str) else target[0], fs)
    try:
        return pads.dataset(target, format=fmt, schema=schema, filesystem=fs, **options)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise store_error(url, exc) from None


def _url_data_files(fs: pafs.FileSystem, path: str, url: str) -> tuple[str, list[str]]:
    """:func:`_data_files` of a prefix of an object store: the same files, in the same order as on disk."""
    found: dict[str, list[str]] = {}

    def walk(folder: str) -> None:
        try:
            entries = fs.get_file_info(pafs.FileSelector(folder, recursive=False))
        except (OSError, pa.ArrowException) as exc:
            raise store_error(url, exc) from None
        entries = sorted((e for e in entries if not e.base_name.startswith((".", "_"))), key=lambda e: e.base_name)
        for e in entries:
            if e.type == pafs.FileType.File:
                try:
                    found.setdefault(format_of(e.base_name), []).append(e.path)
                except InputError:
                    continue
        for e in entries:
            if e.type == pafs.FileType.Directory:
                walk(e.path)

    walk(path)
    if not found:
        raise InputError(f"{url}: the prefix holds no Parquet, Arrow IPC/Feather or CSV object "
                         f"(looked for extensions {sorted(FORMATS)}).")
    if len(found) > 1:
        raise InputError(f"{url}: the prefix mixes file formats {sorted(found)}; put one format per dataset.")
    return found.popitem()


def schema_of(source) -> pa.Schema:
    """The dataset's schema (hive partition columns included), read from metadata only.

    Parameters
    ----------
    source : str, path or pyarrow.dataset.Dataset
        As for :func:`open_dataset`.

    Returns
    -------
    pyarrow.Schema

    Raises
    ------
    InputError
        As :func:`open_dataset`.

    Examples
    --------
    >>> schema_of(pads.dataset(pa.table({"score": [0.5]}))).names
    ['score']
    """
    return open_dataset(source).schema


def where(source) -> str:
    """How messages name a source.

    Parameters
    ----------
    source : str, path or pyarrow.dataset.Dataset

    Returns
    -------
    str
        Its path, or "dataset" for an opened Dataset.

    Examples
    --------
    >>> where("data/test.parquet")
    'data/test.parquet'
    """
    return "dataset" if isinstance(source, pads.Dataset) else str(source)
