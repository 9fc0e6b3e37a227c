"""Paths as Spark sees them: listing inputs and writing the files a person opens, through
Spark's Hadoop filesystem layer.

Theory of operation
-------------------
``--traffic`` and ``--out`` are whatever Spark's Hadoop filesystem layer reads: ``file://``,
``hdfs://``, ``s3a://``, ``gs://``, ``abfss://``, ``viewfs://``..., or a path without a scheme,
which Spark resolves against its default filesystem (``fs.defaultFS``: the local one unless
the cluster says otherwise). A ``pathlib.Path`` given to the API means a local file and
becomes a ``file:`` URI. Nothing here opens a file with Python's own I/O:

* inputs are listed by Spark (the ``binaryFile`` source without its content column: a file
  listing that runs where Spark lists, on every filesystem and over Spark Connect too);
* result tables are written by Spark's writers (``DataFrameWriter``);
* the small files a person opens (``report.html``, ``summary.json``) are written through
  Hadoop's ``FileSystem`` API in the driver's JVM, or, over Spark Connect (no JVM here), sent
  with ``SparkSession.copyFromLocalToFs`` for the server to write.
"""

from __future__ import annotations

import os
import re
import shutil
import urllib.parse
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["display", "is_connect", "join", "list_files", "location", "remove", "write_file"]

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def location(path: str | os.PathLike[str]) -> str:
    """A path for Spark: a string as it is (a URI, or a path Spark resolves), a
    ``pathlib.Path`` as an absolute ``file:`` URI."""
    if isinstance(path, PurePath):
        return Path(path).resolve().as_uri()
    return os.fspath(path)


def join(base: str, name: str) -> str:
    """``name`` inside the folder ``base`` (URI or path)."""
    return base.rstrip("/") + "/" + name


def display(uri: str) -> str:
    """A location as a person would write it: a local file as its path."""
    if uri.startswith("file:"):
        return urllib.parse.unquote(re.sub(r"^file:(//)?", "", uri)) or "/"
    return uri


def has_scheme(path: str) -> bool:
    return _SCHEME.match(path) is not None and not re.match(r"^[A-Za-z]:[\\/]", path)


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect client (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def list_files(spark: SparkSession, path: str) -> list[tuple[str, int]]:
    """Every file under ``path`` (a file, a folder, recursively, or a glob), as Spark lists
    them: ``(URI, size)`` in URI order. Hidden files (``_SUCCESS``, ``.crc``) are left out,
    as Spark's readers do.

    Raises:
        FileNotFoundError: nothing is there.
    """
    try:
        rows = (spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(path)
                .select("path", "length").orderBy("path").collect())
    except Exception as exc:
        if "PATH_NOT_FOUND" in str(exc) or "does not exist" in str(exc):
            raise FileNotFoundError(path) from None
        raise
    if not rows:
        raise FileNotFoundError(path)
    return [(r["path"], r["length"]) for r in rows]


def _hadoop(spark: SparkSession, path: str) -> tuple[object, object]:
    """(Hadoop ``FileSystem``, ``Path``) for ``path`` in the driver's JVM: a new instance,
    closed by the caller, so that its settings do not leak into the one Spark caches."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    qualified = hpath.getFileSystem(conf).makeQualified(hpath)
    return jvm.org.apache.hadoop.fs.FileSystem.newInstance(qualified.toUri(), conf), qualified


def write_file(spark: SparkSession, path: str, data: bytes) -> None:
    """Write one small file at ``path`` (replacing it) through Spark's filesystem layer.

    Raises:
        AnalyticsError: nothing to write, a file not written whole (its size afterwards
            differs), or a scheme Spark Connect cannot write to.
    """
    from ._spark import AnalyticsError

    if not data:
        raise AnalyticsError(f"{display(path)}: nothing to write")
    if is_connect(spark):
        # The server writes it, on its default filesystem: copyFromLocalToFs takes no scheme.
        if path.startswith("file:"):
            dest = display(path)
        elif has_scheme(path):
            raise AnalyticsError(f"{path}: over Spark Connect, the report and summary are written by "
                          "the server on its default filesystem: give --out as a path without a "
                          "scheme (the server's fs.defaultFS decides where it is)")
        else:
            dest = path
        from .._hostfiles import temp_folder

        folder = temp_folder("embroker-")  # (the user's alone: _hostfiles)
        try:
            local = folder / (PurePath(dest).name or "file")
            local.write_bytes(data)
            spark.copyFromLocalToFs(str(local), dest)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    fs, hpath = _hadoop(spark, path)
    try:
        fs.setWriteChecksum(False)  # type: ignore[attr-defined]  # no .crc beside the report
        stream = fs.create(hpath, True)  # type: ignore[attr-defined]
        try:
            stream.write(bytearray(data))
        finally:
            stream.close()
        written = fs.getFileStatus(hpath).getLen()  # type: ignore[attr-defined]
    finally:
        fs.close()  # type: ignore[attr-defined]
    if written != len(data):
        raise AnalyticsError(f"{display(path)}: {written} bytes written of {len(data)}")


def remove(spark: SparkSession, path: str) -> bool:
    """Delete ``path`` (recursively) if it exists; ``False`` where that cannot be done from
    here (over Spark Connect)."""
    if is_connect(spark):
        return False
    fs, hpath = _hadoop(spark, path)
    try:
        if fs.exists(hpath):  # type: ignore[attr-defined]
            fs.delete(hpath, True)  # type: ignore[attr-defined]
    finally:
        fs.close()  # type: ignore[attr-defined]
    return True
