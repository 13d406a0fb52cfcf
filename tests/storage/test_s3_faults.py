"""Object storage under faults: a real SeaweedFS behind a fault-injecting proxy (tests/fault_proxy.py).

Every operation either succeeds with the right bytes or fails with one line naming the URI once its
attempts are spent; a cache never holds wrong bytes and an object is never half published.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time

import pytest
from support.fault_proxy import Fault, FaultProxy
from support.s3_server import S3Server, SeaweedProcess, _point_boto3_at

from foxhunt import storage
from foxhunt.errors import UsageError

MiB = 1024 * 1024


@pytest.fixture(autouse=True)
def private_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("FOXHUNT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def quick_retries(monkeypatch):
    """Waits of milliseconds between attempts, so a test spends its attempts in well under a second."""
    monkeypatch.setattr(storage.s3, "BACKOFF_FIRST_SECONDS", 0.01)
    monkeypatch.setattr(storage.s3, "BACKOFF_MAX_SECONDS", 0.05)


def payload(size: int, seed: int = 0) -> bytes:
    block = hashlib.sha256(str(seed).encode()).digest() * 4096  # 128 KiB that differ per seed
    return (block * (size // len(block) + 1))[:size]


def put_direct(server: S3Server, uri: str, data: bytes, *, crc: bool = True) -> None:
    """Store an object without going through the proxy; `crc=False` stores it without an S3 checksum."""
    client = server.client()
    if not crc:
        import boto3
        from botocore.config import Config

        config = Config(s3={"addressing_style": "path"}, request_checksum_calculation="when_required")
        client = boto3.client(
            "s3",
            endpoint_url=server.endpoint,
            config=config,
            region_name="us-east-1",
            aws_access_key_id="foxhunt-test",
            aws_secret_access_key="foxhunt-test",
        )
    bucket, key = storage.split_s3(uri)
    client.put_object(Bucket=bucket, Key=key, Body=data)


def cached_files(cache) -> list[str]:
    return sorted(p.name for p in cache.rglob("*") if p.is_file() and p.parent.name in ("objects", "staging"))


def test_a_download_survives_connection_resets(s3_proxy, seaweed_server, quick_retries):
    data = payload(2 * MiB)
    uri = seaweed_server.uri("reset.bin")
    put_direct(seaweed_server, uri, data)
    s3_proxy.next_connections(Fault(reset=True), Fault(reset=True), Fault(reset=True))
    fetched = storage.fetch_cached(uri)
    assert fetched.path.read_bytes() == data
    assert fetched.checksum == hashlib.sha256(data).hexdigest()
    assert s3_proxy.connections >= 4


def test_a_download_survives_a_stream_cut_in_the_middle(s3_proxy, seaweed_server, quick_retries):
    data = payload(3 * MiB, seed=1)
    uri = seaweed_server.uri("cut.bin")
    put_direct(seaweed_server, uri, data)
    s3_proxy.next_connections(Fault(cut_response_after=MiB), Fault(cut_response_after=MiB))
    assert storage.fetch_cached(uri).path.read_bytes() == data


def test_a_stream_cut_every_time_fails_in_one_line_and_caches_nothing(
    s3_proxy, seaweed_server, quick_retries, monkeypatch, private_cache
):
    monkeypatch.setenv("FOXHUNT_S3_ATTEMPTS", "3")
    uri = seaweed_server.uri("always-cut.bin")
    put_direct(seaweed_server, uri, payload(3 * MiB))
    s3_proxy.every_connection(Fault(cut_response_after=MiB))
    with pytest.raises(storage.StorageError) as failure:
        storage.fetch_cached(uri)
    message = str(failure.value)
    assert message.startswith(f"{uri}: download failed after 3 attempts") and "\n" not in message
    assert failure.value.exit_code == 1
    assert cached_files(private_cache) == []


@pytest.mark.parametrize("crc", [False, True], ids=["md5-etag-only", "with-s3-checksum"])
def test_a_corrupted_byte_is_caught_and_downloaded_again(
    crc, s3_proxy, s3_get_requests, seaweed_server, quick_retries
):
    data = payload(2 * MiB, seed=2)
    uri = seaweed_server.uri("flip.bin")
    put_direct(seaweed_server, uri, data, crc=crc)
    # The first connection carries the HEAD and then the GET; a byte of the body is inverted.
    s3_proxy.next_connections(Fault(flip_response_byte=MiB))
    fetched = storage.fetch_cached(uri)
    assert fetched.path.read_bytes() == data
    assert len(s3_get_requests) == 2  # the corrupt download was refused and fetched again


def test_a_stalled_stream_is_noticed_within_the_read_timeout(s3_proxy, seaweed_server, monkeypatch):
    monkeypatch.setenv("FOXHUNT_S3_READ_TIMEOUT", "1")
    data = payload(2 * MiB, seed=3)
    uri = seaweed_server.uri("stall.bin")
    put_direct(seaweed_server, uri, data)
    s3_proxy.next_connections(Fault(stall_response_after=512 * 1024))
    start = time.monotonic()
    assert storage.fetch_cached(uri).path.read_bytes() == data
    assert time.monotonic() - start < 8  # botocore's 60 s default would still be waiting


@pytest.fixture(scope="module")
def own_seaweed(tmp_path_factory):
    """A SeaweedFS of this module's own, so killing it disturbs no other test."""
    weed = SeaweedProcess(tmp_path_factory.mktemp("seaweed-restart"))
    weed.start()
    try:
        yield weed
    finally:
        weed.stop()


def test_a_download_survives_the_server_killed_and_restarted(own_seaweed, monkeypatch):
    # The server is back about 5 s after the kill (longer on a loaded host: once 10 attempts, 9 s, were not
    # enough); waits capped at 1 s over up to 60 attempts catch it within a second of its return, for a
    # minute (the default cap, 8 s, could wait out another 8 s, all of it idle).
    monkeypatch.setattr(storage.s3, "BACKOFF_MAX_SECONDS", 1.0)
    monkeypatch.setenv("FOXHUNT_S3_ATTEMPTS", "60")
    server = own_seaweed.server
    data = payload(8 * MiB, seed=4)
    uri = server.uri("restart.bin")
    put_direct(server, uri, data)
    proxy = FaultProxy("127.0.0.1", own_seaweed.ports["s3"])
    _point_boto3_at(monkeypatch, S3Server(endpoint=proxy.endpoint, bucket=server.bucket))
    events = []

    def crash_then_restart() -> None:
        own_seaweed.kill()
        events.append("killed")
        threading.Timer(2.0, lambda: (own_seaweed.start(), events.append("restarted"))).start()

    proxy.next_connections(Fault(hook_after=(2 * MiB, crash_then_restart)))
    try:
        fetched = storage.fetch_cached(uri)
    finally:
        proxy.stop()
    assert events == ["killed", "restarted"]
    assert fetched.path.read_bytes() == data


@pytest.fixture
def small_parts(monkeypatch):
    # 5 MiB is S3's smallest part: an 11 MiB file goes up in three.
    monkeypatch.setattr(storage.s3, "MULTIPART_THRESHOLD", 5 * MiB)
    monkeypatch.setattr(storage.s3, "MULTIPART_CHUNKSIZE", 5 * MiB)


def test_an_upload_cut_every_time_publishes_nothing_and_leaves_no_parts(
    s3_proxy, seaweed_server, quick_retries, small_parts, monkeypatch, tmp_path
):
    monkeypatch.setenv("FOXHUNT_S3_ATTEMPTS", "2")
    src = tmp_path / "big.bin"
    src.write_bytes(payload(11 * MiB, seed=5))
    uri = seaweed_server.uri("big.bin")
    s3_proxy.every_connection(Fault(cut_request_after=3 * MiB))
    with pytest.raises(storage.StorageError, match=f"^{uri}: upload failed after 2 attempts"):
        storage.write_atomic(uri, src)
    s3_proxy.every_connection(None)
    assert not storage.exists(uri)
    bucket, key = storage.split_s3(uri)
    uploads = seaweed_server.client().list_multipart_uploads(Bucket=bucket, Prefix=key).get("Uploads", [])
    assert uploads == []  # aborted, not left to linger


def test_an_upload_cut_once_is_tried_again_and_published_whole(
    s3_proxy, seaweed_server, quick_retries, small_parts, tmp_path
):
    src = tmp_path / "big.bin"
    src.write_bytes(payload(11 * MiB, seed=6))
    uri = seaweed_server.uri("big.bin")
    s3_proxy.next_connections(Fault(cut_request_after=3 * MiB))
    storage.write_atomic(uri, src)
    bucket, key = storage.split_s3(uri)
    assert seaweed_server.client().get_object(Bucket=bucket, Key=key)["Body"].read() == src.read_bytes()


def test_a_put_cut_every_time_publishes_nothing(s3_proxy, seaweed_server, quick_retries, monkeypatch):
    monkeypatch.setenv("FOXHUNT_S3_ATTEMPTS", "2")
    uri = seaweed_server.uri("put.bin")
    s3_proxy.every_connection(Fault(cut_request_after=MiB))
    with pytest.raises(storage.StorageError, match=f"^{uri}: PUT failed after 2 attempts"):
        storage.write_atomic(uri, payload(3 * MiB))
    s3_proxy.every_connection(None)
    assert not storage.exists(uri)


def test_staged_write_leaves_no_staging_file_when_the_upload_fails(
    s3_proxy, seaweed_server, quick_retries, monkeypatch, private_cache
):
    monkeypatch.setenv("FOXHUNT_S3_ATTEMPTS", "1")
    uri = seaweed_server.uri("staged.bin")
    s3_proxy.every_connection(Fault(reset=True))
    with pytest.raises(storage.StorageError):
        with storage.staged_write(uri) as tmp:
            tmp.write_bytes(b"x" * 1000)
    assert cached_files(private_cache) == []


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_endpoint_fails_in_one_line_naming_the_uri(quick_retries, monkeypatch):
    _point_boto3_at(monkeypatch, S3Server(endpoint=f"http://127.0.0.1:{free_port()}", bucket="foxhunt-test"))
    monkeypatch.setenv("FOXHUNT_S3_ATTEMPTS", "2")
    with pytest.raises(storage.StorageError) as failure:
        storage.read_bytes("s3://foxhunt-test/bars.csv")
    message = str(failure.value)
    assert (
        message.startswith("s3://foxhunt-test/bars.csv: GET failed after 2 attempts") and "\n" not in message
    )
    assert "Could not connect" in message and failure.value.exit_code == 1


def test_missing_credentials_are_bad_input_in_one_line(monkeypatch, tmp_path):
    _point_boto3_at(monkeypatch, S3Server(endpoint=f"http://127.0.0.1:{free_port()}", bucket="foxhunt-test"))
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(storage.StorageAccessError, match="no S3 credentials") as failure:
        storage.check_input("s3://foxhunt-test/bars.csv")
    assert failure.value.exit_code == 2


def test_a_missing_bucket_and_a_missing_key_are_told_apart(moto_s3):
    with pytest.raises(storage.MissingObject, match="no such bucket 'no-such-bucket'"):
        storage.check_input("s3://no-such-bucket/bars.csv")
    with pytest.raises(storage.MissingObject, match="no such object"):
        storage.check_input(moto_s3.uri("absent.csv"))


def test_the_retry_budget_outlasts_a_server_restart_of_tens_of_seconds(monkeypatch):
    monkeypatch.setattr(storage.s3.random, "uniform", lambda low, high: low)  # every jitter at its shortest
    attempts = storage.s3.SETTINGS["FOXHUNT_S3_ATTEMPTS"]
    assert sum(storage.s3.backoff_seconds(n) for n in range(1, attempts)) > 25


def test_the_waits_double_from_a_quarter_second_up_to_the_cap(monkeypatch):
    monkeypatch.setattr(storage.s3.random, "uniform", lambda lo, hi: 1.0)
    assert [storage.s3.backoff_seconds(n) for n in range(1, 8)] == [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 8.0]


@pytest.mark.parametrize(
    "name", ["FOXHUNT_S3_ATTEMPTS", "FOXHUNT_S3_READ_TIMEOUT", "FOXHUNT_S3_CONNECT_TIMEOUT"]
)
@pytest.mark.parametrize("value", ["abc", "0", "-3"])
def test_a_bad_retry_setting_is_a_usage_error_naming_it(name, value, monkeypatch):
    monkeypatch.setenv(name, value)
    with pytest.raises(UsageError, match=f"^{name}="):
        storage.s3.setting(name)


def test_retry_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("FOXHUNT_S3_ATTEMPTS", "4")
    monkeypatch.setenv("FOXHUNT_S3_READ_TIMEOUT", "2.5")
    assert storage.s3.setting("FOXHUNT_S3_ATTEMPTS") == 4
    assert storage.s3.setting("FOXHUNT_S3_READ_TIMEOUT") == 2.5
    monkeypatch.delenv("FOXHUNT_S3_ATTEMPTS")
    assert storage.s3.setting("FOXHUNT_S3_ATTEMPTS") == 10
    assert (
        os.environ.get("FOXHUNT_S3_CONNECT_TIMEOUT") is None
        and storage.s3.setting("FOXHUNT_S3_CONNECT_TIMEOUT") == 5
    )
