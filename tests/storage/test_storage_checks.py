"""storage: misspelt URIs are refused, and inputs and outputs are checked before any work."""

from __future__ import annotations

import os
import threading

import pytest

from foxhunt import storage
from foxhunt.errors import UsageError


@pytest.mark.parametrize(
    ("uri", "problem"),
    [
        ("s3://", "no bucket after s3://"),
        ("s3:///runs/r1", "no bucket after s3://"),
        ("s3:/bucket/run", "misspelt S3 URI"),
        ("S3://bucket/run", "misspelt S3 URI"),
        ("s3:bucket/run", "misspelt S3 URI"),
        ("s3:", "misspelt S3 URI"),
        ("gs://bucket/run", "'gs:' looks like a URI scheme"),
        ("file:///data/bars.csv", "'file:' looks like a URI scheme"),
        ("s3://Bucket_1/run", "'Bucket_1' is not an S3 bucket name"),
        ("s3://bucket//run", "an empty path segment"),
    ],
)
def test_a_misspelt_uri_is_refused_naming_it(uri, problem):
    with pytest.raises(storage.BadURI, match=problem) as refusal:
        storage.locate(uri)
    assert str(refusal.value).startswith(f"{uri}: ")
    assert refusal.value.exit_code == 2 and "\n" not in str(refusal.value)


@pytest.mark.parametrize("uri", ["s3://", "s3:/bucket/run", "S3://bucket/run"])
def test_a_misspelt_output_writes_nothing_anywhere(uri, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(storage.BadURI):
        storage.write_bytes(f"{uri}/summary.json", b"{}")
    with pytest.raises(storage.BadURI):
        storage.check_output(uri, folder=True)
    assert list(tmp_path.iterdir()) == []  # no local folder named "s3:" or "S3:"


def test_a_local_path_may_hold_a_colon_when_it_says_it_is_local(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    storage.write_bytes("./s3:/x.bin", b"1")
    assert (tmp_path / "s3:" / "x.bin").read_bytes() == b"1"
    assert not storage.is_s3("./s3:/x.bin") and not storage.is_s3("data/2024:01/bars.csv")


def test_a_bucket_alone_is_no_object(moto_s3):
    with pytest.raises(storage.BadURI, match="names a bucket or folder, not an object"):
        storage.read_bytes("s3://foxhunt-test")


# ---- inputs -------------------------------------------------------------------------------------
def test_a_missing_input_file_is_named(tmp_path):
    with pytest.raises(storage.MissingObject, match=r"nope\.csv: no such file") as refusal:
        storage.check_input(str(tmp_path / "nope.csv"))
    assert refusal.value.exit_code == 2


def test_a_folder_given_as_an_input_file_is_refused(tmp_path):
    with pytest.raises(storage.StorageAccessError, match="is a folder, not a file"):
        storage.check_input(str(tmp_path))


def test_a_fifo_given_as_an_input_is_refused_at_once(tmp_path):
    fifo = tmp_path / "bars.csv"
    os.mkfifo(fifo)
    outcome = []
    worker = threading.Thread(
        target=lambda: outcome.append(_refusal(storage.check_input, str(fifo))), daemon=True
    )
    worker.start()
    worker.join(timeout=5)
    assert outcome and "is a FIFO, not a regular file" in outcome[0]  # opening it would wait for a writer
    assert "is a FIFO" in _refusal(storage.read_bytes, str(fifo))


def _refusal(call, *args) -> str:
    try:
        call(*args)
    except storage.StorageAccessError as exc:
        return str(exc)
    return "accepted"


def test_an_s3_input_is_checked_with_one_head(moto_s3):
    uri = moto_s3.uri("bars.csv")
    storage.write_bytes(uri, b"x")
    storage.check_input(uri)
    with pytest.raises(storage.MissingObject, match="no such object"):
        storage.check_input(moto_s3.uri("absent.csv"))


# ---- outputs ------------------------------------------------------------------------------------
def test_an_output_that_is_an_input_is_refused(tmp_path):
    bars = tmp_path / "bars.csv"
    bars.write_text("timestamp\n")
    with pytest.raises(UsageError, match=r"bars\.csv: the output would overwrite the input"):
        storage.check_output(str(bars), inputs=[str(bars)])
    alias = tmp_path / "alias.csv"
    alias.symlink_to(bars)
    with pytest.raises(UsageError, match="would overwrite the input"):
        storage.check_output(str(alias), inputs=[str(bars)])
    assert bars.read_text() == "timestamp\n"


def test_an_output_inside_an_input_is_refused(tmp_path):
    bars = tmp_path / "bars.csv"
    with pytest.raises(UsageError, match="would overwrite the input"):
        storage.check_output(str(bars / "run"), inputs=[str(bars)], folder=True)


def test_an_s3_output_that_is_an_input_is_refused():
    with pytest.raises(UsageError, match="would overwrite the input s3://data-bucket/bars.parquet"):
        storage.check_output("s3://data-bucket/bars.parquet", inputs=["s3://data-bucket/bars.parquet"])


def test_other_outputs_beside_an_input_are_fine(tmp_path):
    bars = tmp_path / "bars.csv"
    bars.write_text("x")
    storage.check_output(str(tmp_path / "bars.fxcache"), inputs=[str(bars)])
    storage.check_output(str(tmp_path / "run"), inputs=[str(bars), "s3://data-bucket/bars.csv"], folder=True)


def test_an_output_under_a_file_is_refused(tmp_path):
    blocker = tmp_path / "taken"
    blocker.write_text("x")
    with pytest.raises(storage.StorageAccessError, match="is a file, not a folder"):
        storage.check_output(str(blocker / "run"), folder=True)


def test_an_output_folder_that_is_a_file_is_refused(tmp_path):
    blocker = tmp_path / "run"
    blocker.write_text("x")
    with pytest.raises(storage.StorageAccessError, match="exists and is not a folder"):
        storage.check_output(str(blocker), folder=True)


def test_an_output_file_that_is_a_folder_is_refused(tmp_path):
    with pytest.raises(storage.StorageAccessError, match="is a folder, expected a file name"):
        storage.check_output(str(tmp_path))


def test_an_unwritable_output_is_refused_before_work():
    # /sys refuses new files even to root, like a read-only volume in a pod.
    with pytest.raises(storage.StorageAccessError, match=r"cannot write in /sys \("):
        storage.check_output("/sys/foxhunt-run", folder=True)


def test_a_local_output_check_creates_nothing(tmp_path):
    storage.check_output(str(tmp_path / "a" / "b" / "run"), folder=True)
    storage.check_output(str(tmp_path / "x.fxcache"))
    assert list(tmp_path.iterdir()) == []


def test_an_s3_output_check_probes_and_leaves_nothing(moto_s3):
    run = moto_s3.uri("runs", "r1")
    storage.check_output(run, folder=True)
    storage.check_output(storage.join(run, "features.fxcache"))
    assert storage.list_prefix(run.rsplit("/", 2)[0]) == []


def test_an_s3_output_in_a_missing_bucket_is_refused(moto_s3):
    with pytest.raises(storage.MissingObject, match="no such bucket 'no-such-bucket'") as refusal:
        storage.check_output("s3://no-such-bucket/runs/r1", folder=True)
    assert refusal.value.exit_code == 2


def test_an_s3_output_file_needs_a_key(moto_s3):
    with pytest.raises(storage.BadURI, match="not an object"):
        storage.check_output("s3://foxhunt-test")
