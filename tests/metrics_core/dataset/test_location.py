"""Object-store sources (s3://) against a real S3-compatible server on 127.0.0.1: same statistics as the local
files, and every refusal (no bucket, no credentials, a missing key, a denied read) named with what to set."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from s3_server import BUCKET, start_s3_server

import metrics_core as mc
from metrics_core.dataset import Columns, open_dataset, scan_stats
from metrics_core.dataset.location import filesystem_of, is_url, url_of
from metrics_core.errors import InputError


@pytest.fixture(scope="module")
def s3():
    server = start_s3_server()
    yield server
    server.stop()


@pytest.fixture
def s3_env(s3, monkeypatch, tmp_path):
    """This test's process reads the bucket as the reader; no shared AWS files of the machine count."""
    for key, value in s3.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(key, raising=False)
    return s3


def _rows(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    score = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1).round(3)  # ties, as real scores have
    return pa.table({"label": y, "score": score, "weight": rng.integers(1, 50, n).astype(float)})


def _same_metrics(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert a[key] == b[key] or (math.isnan(a[key]) and math.isnan(b[key])), key


def test_is_url_and_the_names_in_messages():
    assert is_url("s3://b/k.parquet") and is_url("gs://b/") and not is_url("/data/s3.parquet")
    assert not is_url("file.parquet") and not is_url(None)
    assert url_of(None, "a/b.parquet") == "a/b.parquet"
    with pytest.raises(InputError, match=r"s3:///x: no bucket in the URL; write s3://BUCKET/PATH"):
        filesystem_of("s3:///x")


def test_an_s3_file_and_prefix_give_the_local_statistics(s3_env, tmp_path):
    local = tmp_path / "scores"
    for i, period in enumerate(["2024-01", "2024-02"]):
        (local / f"period={period}").mkdir(parents=True)
        pq.write_table(_rows(3000, i), local / f"period={period}" / "part-0.parquet", row_group_size=1000)
    (local / "_SUCCESS").write_text("")  # a marker beside the data, skipped as on disk
    url = s3_env.upload(local, "runs/scores/")
    assert url == f"s3://{BUCKET}/runs/scores/"
    columns = Columns(weight="weight")
    on_disk = mc.binary_from_stats(scan_stats(str(local), "binary", columns, batch_rows=1000), n_boot=50)
    remote = mc.binary_from_stats(scan_stats(url, "binary", columns, batch_rows=1000), n_boot=50)
    _same_metrics(on_disk.metrics, remote.metrics)
    assert remote.stats.n_rows == 6000
    # the hive partition column comes through, and one object reads as a file
    assert open_dataset(url).to_table().column("period").unique().to_pylist() == ["2024-01", "2024-02"]
    one = s3_env.upload(local / "period=2024-01" / "part-0.parquet", "runs/one.parquet")
    assert scan_stats(one, "binary").n_rows == 3000


def test_a_semicolon_csv_on_s3_is_read_as_on_disk(s3_env, tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("label;score\n1;0,9\n0;0,2\n1;0,4\n")
    url = s3_env.upload(path, "csv/rows.csv")
    on_disk = scan_stats(str(path), "binary").confusion.matrix.tolist()
    assert scan_stats(url, "binary").confusion.matrix.tolist() == on_disk == [[1, 0], [1, 1]]  # 0,4 read as 0.4


@pytest.mark.parametrize("case", ["no bucket", "missing key", "no credentials", "denied read"])
def test_each_refusal_names_the_url_and_what_to_set(s3_env, tmp_path, monkeypatch, case):
    pq.write_table(_rows(10, 0), tmp_path / "t.parquet")
    url = s3_env.upload(tmp_path / "t.parquet", "errors/t.parquet")
    expected = {
        "no bucket": (f"s3://no-such-bucket/t.parquet: the bucket 'no-such-bucket' does not exist at "
                      f"{s3_env.endpoint}", "AWS_ENDPOINT_URL"),
        "missing key": (f"s3://{BUCKET}/errors/absent.parquet: no such object or prefix", "Check the path"),
        "no credentials": (f"{url}: the store refused an unsigned request: no credentials were found",
                           "Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
        "denied read": (f"{url}: access denied at {s3_env.endpoint}", "lack s3:GetObject"),
    }[case]
    target = {"no bucket": "s3://no-such-bucket/t.parquet",
              "missing key": f"s3://{BUCKET}/errors/absent.parquet"}.get(case, url)
    if case == "no credentials":
        monkeypatch.delenv("AWS_ACCESS_KEY_ID")
        monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    if case == "denied read":  # a user who may list the bucket but not read its objects
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_env.lister[0])
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_env.lister[1])
    with pytest.raises(InputError) as caught:
        scan_stats(target, "binary")
    message = str(caught.value)
    assert message.startswith(expected[0]) and expected[1] in message, message


def test_a_spark_dataframe_given_to_a_scan_says_where_it_goes():
    class FrameLike:  # what a pyspark DataFrame looks like to metrics_core (which never imports pyspark)
        sparkSession = None

        def mapInArrow(self, fn, schema):
            raise AssertionError("not called")

    with pytest.raises(InputError, match=r"Spark DataFrame .*flows\.compute_stats\.compute_stats\(df"):
        scan_stats(FrameLike(), "binary")
