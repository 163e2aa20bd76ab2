"""Where a source is: a local path or an object-store URL (s3://, gs://), as a pyarrow filesystem and a path in it."""

from __future__ import annotations

import os
from functools import lru_cache

import pyarrow.fs as pafs

from metrics_core.errors import InputError

__all__ = ["OBJECT_STORES", "filesystem_of", "is_url", "store_error", "url_of"]

#: URL schemes read through pyarrow's filesystems (S3 and S3-compatible stores, Google Cloud Storage).
OBJECT_STORES = ("s3", "gs", "gcs")

#: The variables that choose the S3 endpoint and credentials, as the AWS tools read them.
S3_VARIABLES = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE",
                "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE")
_GCS_VARIABLES = ("GOOGLE_APPLICATION_CREDENTIALS", "STORAGE_EMULATOR_HOST")


def is_url(source) -> bool:
    """Whether ``source`` is an object-store URL (``s3://bucket/key``, ``gs://bucket/key``).

    Parameters
    ----------
    source : str, path or other

    Returns
    -------
    bool
        False for a local path, a ``file://`` URL's absence of a scheme, or a dataset object.

    Examples
    --------
    >>> is_url("s3://bucket/data/"), is_url("data/test.parquet"), is_url("gs://b/k.parquet")
    (True, False, True)
    """
    return isinstance(source, str) and source.split("://", 1)[0].lower() in OBJECT_STORES and "://" in source


def filesystem_of(url: str) -> tuple[pafs.FileSystem, str]:
    """The pyarrow filesystem of an object-store URL and the path in it (``bucket/key``, no slash at the end).

    The one place that turns a URL into ``(filesystem, path)``. S3 reads the usual variables:
    ``AWS_ENDPOINT_URL`` (an S3-compatible server such as MinIO), ``AWS_ACCESS_KEY_ID`` /
    ``AWS_SECRET_ACCESS_KEY`` (or ``AWS_PROFILE``), ``AWS_REGION``. The filesystem is kept per
    scheme, bucket and those variables, so a scan that opens its source many times connects once.

    Parameters
    ----------
    url : str
        ``s3://bucket/prefix/``, ``s3://bucket/file.parquet``, ``gs://bucket/...``.

    Returns
    -------
    tuple of (pyarrow.fs.FileSystem, str)

    Raises
    ------
    InputError
        A URL without a bucket, or one the filesystem refuses, naming the URL and what to set.

    Notes
    -----
    A bucket outside ``us-east-1`` on AWS needs ``AWS_REGION``: the region is not looked up
    (that would be a request to AWS for every new filesystem).
    """
    scheme, rest = url.split("://", 1)
    bucket = rest.split("/", 1)[0]
    if not bucket:
        raise InputError(f"{url}: no bucket in the URL; write {scheme}://BUCKET/PATH.")
    fs = _filesystem(scheme.lower(), _environment(scheme.lower()))
    return fs, rest.rstrip("/")


def _environment(scheme: str) -> tuple:
    names = _GCS_VARIABLES if scheme in ("gs", "gcs") else S3_VARIABLES
    return tuple((n, os.environ.get(n)) for n in names)


@lru_cache(maxsize=16)
def _filesystem(scheme: str, env: tuple) -> pafs.FileSystem:
    """One filesystem per scheme and environment (the variables of ``env`` that are set)."""
    if scheme == "s3":
        endpoint = dict(env).get("AWS_ENDPOINT_URL_S3") or dict(env).get("AWS_ENDPOINT_URL")
        options = {}
        if endpoint:  # given explicitly: pyarrow reads AWS_ENDPOINT_URL itself only in recent releases
            scheme_of, _, host = endpoint.rpartition("://")
            options = dict(endpoint_override=host or endpoint, scheme=scheme_of or "https")
        region = dict(env).get("AWS_REGION") or dict(env).get("AWS_DEFAULT_REGION")
        if region:
            options["region"] = region
        return pafs.S3FileSystem(**options)
    return pafs.GcsFileSystem()


def url_of(fs: pafs.FileSystem | None, path: str) -> str:
    """How messages name ``path`` of ``fs``: the URL for an object store, the path itself on disk.

    Parameters
    ----------
    fs : pyarrow.fs.FileSystem or None
    path : str

    Returns
    -------
    str

    Examples
    --------
    >>> url_of(None, "data/a.parquet"), url_of(pafs.S3FileSystem(anonymous=True), "bucket/a.parquet")
    ('data/a.parquet', 's3://bucket/a.parquet')
    """
    if isinstance(fs, pafs.S3FileSystem):
        return f"s3://{path}"
    if type(fs).__name__ == "GcsFileSystem":
        return f"gs://{path}"
    return path


def store_error(url: str, exc: BaseException) -> InputError:
    """An object store's refusal restated: the URL, what went wrong in words, and what to set.

    Parameters
    ----------
    url : str
        The URL that was read.
    exc : exception
        pyarrow's error (its text carries the store's error code).

    Returns
    -------
    InputError
        For a missing bucket, a missing key, missing credentials, a denied read, an unreachable
        endpoint; otherwise the store's own message after the URL.

    Examples
    --------
    >>> error = store_error("s3://b/k.parquet", OSError("AWS Error NO_SUCH_BUCKET during HeadObject"))
    >>> print(error)  # doctest: +ELLIPSIS
    s3://b/k.parquet: the bucket 'b' does not exist. Check the bucket's name...
    """
    text = str(exc)
    scheme, rest = url.split("://", 1)
    bucket = rest.split("/", 1)[0]
    s3 = scheme.lower() == "s3"
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    where = f" at {endpoint}" if s3 and endpoint else ""
    if "NO_SUCH_BUCKET" in text or "NoSuchBucket" in text or f"Bucket '{bucket}' not found" in text:
        return InputError(f"{url}: the bucket {bucket!r} does not exist{where}. Check the bucket's name"
                          + (", AWS_ENDPOINT_URL (an S3-compatible server) and AWS_REGION." if s3 else "."))
    denied = any(s in text for s in ("ACCESS_DENIED", "AccessDenied", "Forbidden", "403", "InvalidAccessKeyId",
                                     "SignatureDoesNotMatch", "INVALID_ACCESS_KEY_ID", "permission"))
    if s3 and denied and not _s3_credentials_set():
        return InputError(f"{url}: the store refused an unsigned request: no credentials were found. Set "
                          "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary "
                          "ones), or AWS_PROFILE, for an account that may read it.")
    if denied:
        what = ("the credentials in use (AWS_ACCESS_KEY_ID / AWS_PROFILE) lack s3:GetObject / s3:ListBucket on it"
                if s3 else "the credentials in use (GOOGLE_APPLICATION_CREDENTIALS) may not read it")
        return InputError(f"{url}: access denied{where}: {what}. Use credentials that may read it, or ask for "
                          f"read access. ({_first_line(text)})")
    if "NO_SUCH_KEY" in text or "NoSuchKey" in text or "Path does not exist" in text or "not found" in text.lower():
        return InputError(f"{url}: no such object or prefix. Check the path (listing the bucket shows what is "
                          "there).")
    if s3 and any(s in text for s in ("curlCode", "Couldn't connect", "connect to server", "NETWORK_CONNECTION")):
        return InputError(f"{url}: the store{where or ''} does not answer ({_first_line(text)}). Check "
                          "AWS_ENDPOINT_URL (an S3-compatible server) and the network.")
    return InputError(f"{url}: cannot be read: {_first_line(text)}")


def _s3_credentials_set() -> bool:
    """Whether any of the usual sources of S3 credentials is set (variables or the shared files)."""
    if any(os.environ.get(n) for n in ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
                                         "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                                         "AWS_CONTAINER_CREDENTIALS_FULL_URI")):
        return True
    files = [os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or os.path.expanduser("~/.aws/credentials"),
             os.environ.get("AWS_CONFIG_FILE") or os.path.expanduser("~/.aws/config")]
    return any(os.path.isfile(f) for f in files)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:300] if text.strip() else "no detail"
