"""storage.fetch_cached: a download cache keyed by what the reader verified, never by what the remote claims."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from support.fault_proxy import Fault
from support.fxcache_cases import make_table

from foxhunt import storage
from foxhunt.data import fxcache
from foxhunt.storage import cache as download_cache

HEX_NAME = re.compile(r"[0-9a-f]{64}(\.[A-Za-z0-9]+)*")


@pytest.fixture
def cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("FOXHUNT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def files_under(folder) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def test_a_fetch_is_keyed_by_the_checksum_the_reader_computed(moto_s3, cache_dir):
    uri = moto_s3.uri("bars.csv.gz")
    storage.write_bytes(uri, b"abc")
    fetched = storage.fetch_cached(uri)
    assert fetched.checksum == hashlib.sha256(b"abc").hexdigest() and not fetched.cache_hit
    assert fetched.path == cache_dir / "objects" / f"{fetched.checksum}.csv.gz"
    assert storage.fetch_cached(uri).cache_hit
    names = sorted(str(p.relative_to(cache_dir).parent) for p in cache_dir.rglob("*") if p.is_file())
    assert names == ["index", "locks", "objects"]
    assert all(HEX_NAME.fullmatch(p.name) for p in cache_dir.rglob("*") if p.is_file())


def test_a_local_file_is_verified_in_place_and_not_copied(tmp_path, cache_dir):
    path = tmp_path / "bars.csv"
    path.write_bytes(b"abc")
    fetched = storage.fetch_cached(str(path))
    assert fetched.path == path and fetched.checksum == hashlib.sha256(b"abc").hexdigest()
    assert not cache_dir.exists()


def test_a_cached_copy_cut_at_a_line_boundary_is_not_trusted(moto_s3, cache_dir):
    content = b"timestamp,open\n2024-01-02T00:00:00,1\n2024-01-02T00:01:00,2\n"
    uri = moto_s3.uri("bars.csv")
    storage.write_bytes(uri, content)
    cached = storage.fetch_cached(uri).path
    cached.write_bytes(content[: content.index(b"2024-01-02T00:01")])  # still a valid CSV, one row short
    again = storage.fetch_cached(uri)
    assert again.path.read_bytes() == content and not again.cache_hit


def test_a_cached_copy_changed_in_place_is_downloaded_again(moto_s3, cache_dir):
    uri = moto_s3.uri("bars.csv")
    storage.write_bytes(uri, b"0123456789")
    cached = storage.fetch_cached(uri).path
    cached.write_bytes(b"0123456780")  # same size, other bytes
    again = storage.fetch_cached(uri)
    assert again.path.read_bytes() == b"0123456789" and not again.cache_hit


def test_a_verify_that_refuses_the_download_caches_nothing(moto_s3, cache_dir):
    uri = moto_s3.uri("bars.csv")
    storage.write_bytes(uri, b"not what the reader wants")

    def refuse(path):
        raise ValueError(f"{uri}: refused")

    with pytest.raises(ValueError, match="refused"):
        storage.fetch_cached(uri, refuse)
    assert files_under(cache_dir / "objects") == set() and not (cache_dir / "index").exists()


def test_a_verify_must_return_a_hex_checksum(moto_s3, cache_dir):
    uri = moto_s3.uri("bars.csv")
    storage.write_bytes(uri, b"x")
    with pytest.raises(ValueError, match="not a lowercase hex checksum"):
        storage.fetch_cached(uri, lambda path: "../../evil")
    assert files_under(cache_dir / "objects") == set()


@pytest.fixture
def put_fxcache_object(moto_s3, tmp_path_factory):
    """Upload a valid fxcache whose user metadata says whatever its uploader wants."""

    def put(uri: str, table, user_metadata: dict[str, str]) -> None:
        path = tmp_path_factory.mktemp("upload") / "cache.arrow"
        fxcache.write_fxcache(str(path), table, source_uri="bars", source_hash="h")
        bucket, key = storage.split_s3(uri)
        moto_s3.client().put_object(Bucket=bucket, Key=key, Body=path.read_bytes(), Metadata=user_metadata)

    return put


def test_remote_metadata_never_becomes_a_local_path(moto_s3, put_fxcache_object, cache_dir, tmp_path):
    # Beside the cache, where "fxcache/../../evil.arrow" used to land: a file the reader must not touch.
    victim = tmp_path / "evil.arrow"
    victim.write_bytes(b"someone else's file")
    before = files_under(tmp_path)
    uri = moto_s3.uri("cache.arrow")
    put_fxcache_object(uri, make_table(), {"fxcache-checksum": "../../evil"})
    loaded = fxcache.read_fxcache(uri)
    assert len(loaded) == 500 and loaded.path.parent == cache_dir / "objects"
    assert victim.read_bytes() == b"someone else's file"
    outside = {p for p in files_under(tmp_path) - before if not p.startswith("cache/")}
    assert outside == set()


def test_an_object_claiming_another_objects_checksum_does_not_replace_it(
    moto_s3, put_fxcache_object, cache_dir
):
    genuine, other = make_table(seed=1), make_table(seed=2)
    genuine_uri, other_uri = moto_s3.uri("genuine.arrow"), moto_s3.uri("other.arrow")
    claimed = fxcache.write_fxcache(genuine_uri, genuine, source_uri="bars", source_hash="h")["checksum"]
    fxcache.read_fxcache(genuine_uri)
    put_fxcache_object(other_uri, other, {"fxcache-checksum": claimed})
    np.testing.assert_array_equal(fxcache.read_fxcache(other_uri).features, other.features)
    again = fxcache.read_fxcache(genuine_uri)
    assert again.cache_hit
    np.testing.assert_array_equal(again.features, genuine.features)


def test_concurrent_fetches_of_one_object_download_it_once(moto_s3, s3_get_requests, cache_dir):
    uri = moto_s3.uri("bars.parquet")
    data = os.urandom(3 * 1024 * 1024)
    storage.write_bytes(uri, data)
    with ThreadPoolExecutor(4) as pool:
        fetched = list(pool.map(lambda _: storage.fetch_cached(uri), range(4)))
    assert {f.path for f in fetched} == {fetched[0].path} and fetched[0].path.read_bytes() == data
    assert len(s3_get_requests) == 1 and sorted(f.cache_hit for f in fetched) == [False, True, True, True]
    assert files_under(cache_dir / "objects") == {fetched[0].path.name}


def make_part(folder, name: str, age_seconds: float = 0.0):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(b"half a download")
    then = time.time() - age_seconds
    os.utime(path, (then, then))
    return path


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_stale_parts_are_removed_and_live_ones_kept(moto_s3, cache_dir):
    here = download_cache._host_tag()
    objects = cache_dir / "objects"
    dead = make_part(objects, f"a.part-{here}-{dead_pid()}.1a2B3c4D")
    live = make_part(objects, f"b.part-{here}-{os.getpid()}")
    old_elsewhere = make_part(objects, "c.part-0badcafe-12345", age_seconds=2 * 3600)
    fresh_elsewhere = make_part(objects, "d.part-0badcafe-12345", age_seconds=60)
    uri = moto_s3.uri("x.csv")
    storage.write_bytes(uri, b"x")
    storage.fetch_cached(uri)
    assert not dead.exists() and not old_elsewhere.exists()
    assert live.exists() and fresh_elsewhere.exists()


def test_a_download_killed_midway_leaves_nothing_after_the_next_fetch(s3_proxy, seaweed_server, cache_dir):
    uri = seaweed_server.uri("big.bin")
    bucket, key = storage.split_s3(uri)
    seaweed_server.client().put_object(Bucket=bucket, Key=key, Body=os.urandom(6 * 1024 * 1024))
    s3_proxy.every_connection(Fault(stall_response_after=2 * 1024 * 1024))
    code = "import sys; from foxhunt import storage; storage.fetch_cached(sys.argv[1])"
    child = subprocess.Popen([sys.executable, "-c", code, uri], env=dict(os.environ))
    try:
        deadline = time.monotonic() + 30
        while not any(p.stat().st_size for p in cache_dir.glob("objects/*.part-*")):
            assert time.monotonic() < deadline and child.poll() is None, "no part file appeared"
            time.sleep(0.05)
    finally:
        child.kill()
        child.wait()
    s3_proxy.every_connection(None)
    assert list(cache_dir.glob("objects/*.part-*"))  # what a SIGKILL leaves
    other = seaweed_server.uri("small.bin")
    seaweed_server.client().put_object(Bucket=bucket, Key=storage.split_s3(other)[1], Body=b"x")
    storage.fetch_cached(other)
    assert storage.fetch_cached(other).cache_hit
    assert list(cache_dir.glob("objects/*.part-*")) == []


def test_a_fetch_served_from_the_cache_also_removes_dead_parts(moto_s3, cache_dir):
    uri = moto_s3.uri("x.csv")
    storage.write_bytes(uri, b"x")
    storage.fetch_cached(uri)
    dead = make_part(cache_dir / "objects", f"e.part-{download_cache._host_tag()}-{dead_pid()}")
    staged = make_part(cache_dir / "staging", f"f.part-{download_cache._host_tag()}-{dead_pid()}")
    assert storage.fetch_cached(uri).cache_hit
    assert not dead.exists() and not staged.exists()
