"""storage: local paths and s3:// URIs, atomic writes, cached fetches."""

from __future__ import annotations

import sys

import pytest

from foxhunt import storage


def test_is_s3_tells_s3_uris_from_local_paths():
    assert storage.is_s3("s3://bucket/key")
    assert not storage.is_s3("/data/s3://x")
    assert not storage.is_s3("relative/path")


def test_join_appends_parts_to_s3_uris_and_paths(tmp_path):
    assert storage.join("s3://bucket/runs/", "a", "/b.arrow") == "s3://bucket/runs/a/b.arrow"
    assert storage.join(tmp_path, "a", "b.arrow") == str(tmp_path / "a" / "b.arrow")


def test_split_s3_refuses_a_uri_without_a_key():
    with pytest.raises(ValueError, match="s3://bucket"):
        storage.split_s3("s3://bucket")


def test_default_cache_dir_follows_foxhunt_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("FOXHUNT_CACHE_DIR", str(tmp_path / "cache"))
    assert storage.default_cache_dir() == tmp_path / "cache"


def test_local_write_bytes_then_read_bytes_round_trips(tmp_path):
    target = tmp_path / "sub" / "blob.bin"
    storage.write_bytes(str(target), b"payload")
    assert storage.read_bytes(str(target)) == b"payload"
    assert storage.exists(str(target))


def test_local_write_is_invisible_at_the_target_until_complete(tmp_path):
    target = tmp_path / "blob.bin"
    with storage.atomic_local_path(target) as tmp:
        tmp.write_bytes(b"half")
        assert not target.exists()
    assert target.read_bytes() == b"half"


def test_failed_local_write_keeps_the_old_content_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "blob.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="disk gone"):
        with storage.atomic_local_path(target) as tmp:
            tmp.write_bytes(b"partial")
            raise RuntimeError("disk gone")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["blob.bin"]


def test_exists_is_false_for_a_missing_local_file(tmp_path):
    assert not storage.exists(str(tmp_path / "nothing.csv"))


def test_fetch_of_a_local_file_is_the_file_itself(tmp_path):
    path = tmp_path / "bars.csv"
    path.write_text("x")
    assert storage.fetch(str(path)) == path


def test_fetch_of_a_missing_local_file_names_it(tmp_path):
    missing = str(tmp_path / "nope.parquet")
    with pytest.raises(FileNotFoundError, match="nope.parquet"):
        storage.fetch(missing)


def test_local_use_works_without_boto3(monkeypatch, tmp_path):
    # The GPU image has no boto3: a None entry makes `import boto3` fail as it would there.
    monkeypatch.setitem(sys.modules, "boto3", None)
    monkeypatch.setitem(sys.modules, "botocore", None)
    src = tmp_path / "a.bin"
    storage.write_bytes(str(src), b"abc")
    storage.upload_file(src, str(tmp_path / "b.bin"))
    storage.download_file(str(tmp_path / "b.bin"), tmp_path / "c.bin")
    assert storage.fetch(str(tmp_path / "c.bin")).read_bytes() == b"abc"


def test_s3_write_bytes_then_read_bytes_round_trips(moto_s3):
    uri = moto_s3.uri("blob.bin")
    storage.write_bytes(uri, b"payload", metadata={"origin": "test"})
    assert storage.read_bytes(uri) == b"payload"
    assert storage.head(uri)["metadata"] == {"origin": "test"}


def test_s3_exists_tells_present_from_absent(moto_s3):
    uri = moto_s3.uri("blob.bin")
    assert not storage.exists(uri)
    storage.write_bytes(uri, b"x")
    assert storage.exists(uri)


def test_s3_read_of_a_missing_object_names_the_uri(moto_s3):
    uri = moto_s3.uri("missing.bin")
    with pytest.raises(FileNotFoundError, match=uri):
        storage.read_bytes(uri)


def test_s3_upload_file_then_download_file_round_trips_with_metadata(moto_s3, tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(bytes(range(256)) * 100)
    uri = moto_s3.uri("obj.bin")
    storage.upload_file(src, uri, metadata={"source-hash": "abc"})
    out = storage.download_file(uri, tmp_path / "out" / "obj.bin")
    assert out.read_bytes() == src.read_bytes()
    assert storage.head(uri)["metadata"] == {"source-hash": "abc"}


def test_s3_fetch_downloads_once_and_keeps_the_suffix(moto_s3, s3_get_requests, tmp_path):
    uri = moto_s3.uri("bars.parquet")
    storage.write_bytes(uri, b"bars")
    first = storage.fetch(uri, cache_dir=tmp_path)
    second = storage.fetch(uri, cache_dir=tmp_path)
    assert first == second and first.suffix == ".parquet"
    assert first.read_bytes() == b"bars"
    assert len(s3_get_requests) == 1


def test_s3_fetch_downloads_again_when_the_object_changes(moto_s3, tmp_path):
    uri = moto_s3.uri("bars.csv")
    storage.write_bytes(uri, b"old")
    storage.fetch(uri, cache_dir=tmp_path)
    storage.write_bytes(uri, b"new")
    assert storage.fetch(uri, cache_dir=tmp_path).read_bytes() == b"new"


def test_multipart_upload_and_download_round_trip_on_seaweedfs(seaweed_s3, monkeypatch, tmp_path):
    # Shrink the threshold so an 11 MiB file goes up in parts (S3's minimum part is 5 MiB).
    monkeypatch.setattr(storage.s3, "MULTIPART_THRESHOLD", 5 * 1024 * 1024)
    monkeypatch.setattr(storage.s3, "MULTIPART_CHUNKSIZE", 5 * 1024 * 1024)
    src = tmp_path / "big.bin"
    src.write_bytes(bytes(range(251)) * (11 * 1024 * 1024 // 251))
    uri = seaweed_s3.uri("big.bin")
    storage.upload_file(src, uri)
    assert storage.head(uri)["etag"].endswith("-3")  # a multipart ETag counts its parts
    assert storage.download_file(uri, tmp_path / "back.bin").read_bytes() == src.read_bytes()


def test_write_atomic_takes_bytes_or_a_local_file(tmp_path, moto_s3):
    src = tmp_path / "src.bin"
    src.write_bytes(b"from a file")
    for target in (str(tmp_path / "out" / "a.bin"), moto_s3.uri("a.bin")):
        storage.write_atomic(target, b"bytes")
        assert storage.read_bytes(target) == b"bytes"
        storage.write_atomic(target, src)
        assert storage.read_bytes(target) == b"from a file"


@pytest.mark.parametrize("where", ["local", "s3"])
def test_staged_write_publishes_on_success_and_nothing_on_failure(where, tmp_path, moto_s3, monkeypatch):
    monkeypatch.setenv("FOXHUNT_CACHE_DIR", str(tmp_path / "cache"))
    target = str(tmp_path / "out.bin") if where == "local" else moto_s3.uri("out.bin")
    with pytest.raises(RuntimeError, match="writer failed"):
        with storage.staged_write(target) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("writer failed")
    assert not storage.exists(target)
    with storage.staged_write(target, metadata={"kind": "test"}) as tmp:
        tmp.write_bytes(b"whole")
    assert storage.read_bytes(target) == b"whole"
    staged = (
        [p for p in (tmp_path / "cache").rglob("*") if p.is_file()] if (tmp_path / "cache").exists() else []
    )
    assert staged == []
