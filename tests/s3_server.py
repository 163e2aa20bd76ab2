"""A real S3-compatible server for the tests (moto's server mode on 127.0.0.1): a bucket, two users, uploads."""

from __future__ import annotations

import json
import logging
import urllib.request
from dataclasses import dataclass
from pathlib import Path

BUCKET = "classwatch-data"

_READ_ALL = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
# May list the bucket but not read an object: a denied read.
_LIST_ONLY = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:ListBucket",
                                                      "Resource": "*"}]}


@dataclass
class S3Server:
    """The running server: its endpoint, a reader's and a lister's keys, and the variables a client needs."""

    server: object
    endpoint: str
    reader: tuple[str, str]
    lister: tuple[str, str]

    def env(self, keys: tuple[str, str] | None = None) -> dict:
        """The variables of a process that reads the bucket with ``keys`` (default: the reader's);
        the EC2 metadata lookup is off, so a test without keys never leaves this machine."""
        key, secret = keys or self.reader
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret,
                "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}

    def upload(self, local: Path, key: str) -> str:
        """Put a local file (or every file under a folder) at ``key``; the URL of what was uploaded."""
        import boto3

        s3 = boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                          aws_access_key_id=self.reader[0], aws_secret_access_key=self.reader[1])
        local = Path(local)
        files = [local] if local.is_file() else sorted(p for p in local.rglob("*") if p.is_file())
        for f in files:
            s3.upload_file(str(f), BUCKET, key if local.is_file() else f"{key.rstrip('/')}/{f.relative_to(local)}")
        return f"s3://{BUCKET}/{key}"

    def stop(self) -> None:
        self.server.stop()


def start_s3_server() -> S3Server:
    """Start moto on a free 127.0.0.1 port with a bucket and two IAM users, then turn its authentication on.

    One server at a time in a process: moto's state is the process's, so starting one clears what an
    earlier one (stopped, in an earlier test module of the same pytest worker) left behind."""
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    # moto keeps its users, buckets and authentication switch per process, not per server: a server
    # started earlier in this pytest worker left them set (authentication on, the users existing).
    _post(f"{endpoint}/moto-api/reset", b"")
    _post(f"{endpoint}/moto-api/reset-auth", b"inf")
    admin = dict(endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="setup",
                 aws_secret_access_key="setup")
    boto3.client("s3", **admin).create_bucket(Bucket=BUCKET)
    iam = boto3.client("iam", **admin)
    keys = {}
    for user, policy in (("reader", _READ_ALL), ("lister", _LIST_ONLY)):
        iam.create_user(UserName=user)
        iam.put_user_policy(UserName=user, PolicyName="s3", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName=user)["AccessKey"]
        keys[user] = (key["AccessKeyId"], key["SecretAccessKey"])
    # From here on every request must be signed by a known user and allowed by its policy.
    _post(f"{endpoint}/moto-api/reset-auth", b"0")
    return S3Server(server, endpoint, keys["reader"], keys["lister"])


def _post(url: str, data: bytes) -> None:
    """POST ``data`` to one of moto's own endpoints."""
    request = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(request, timeout=10).read()
