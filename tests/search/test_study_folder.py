"""`search.storage.study_folder`: where a search (one fxcache or a universe) keeps its embedded study, and
whether that is a pod-local copy synced to object storage (private: no other process opens it)."""

from __future__ import annotations

from foxhunt import storage
from foxhunt.search.storage import STUDY_FILE, study_folder


def test_a_local_out_is_the_folder_itself_not_synced_and_not_private(tmp_path):
    out = tmp_path / "out"
    with study_folder(str(out)) as folder:
        assert folder.path == out and out.is_dir()
        assert folder.synced is None and not folder.private


def test_a_local_out_started_over_loses_its_old_study_and_keeps_it_otherwise(tmp_path):
    (tmp_path / STUDY_FILE).write_bytes(b"old study")
    with study_folder(str(tmp_path)):
        assert (tmp_path / STUDY_FILE).exists()
    with study_folder(str(tmp_path), start_over=True):
        assert not (tmp_path / STUDY_FILE).exists()


def test_an_s3_out_is_a_temporary_copy_of_the_uploaded_study_synced_back_and_private(moto_s3, tmp_path):
    out = moto_s3.uri("runs", "folder")
    storage.write_bytes(storage.join(out, STUDY_FILE), b"uploaded study")
    with study_folder(out) as folder:
        assert folder.synced == folder.path / STUDY_FILE and folder.private
        assert folder.synced.read_bytes() == b"uploaded study"
        kept = folder.path
    assert not kept.exists()  # the copy goes with the block


def test_an_s3_out_started_over_fetches_nothing(moto_s3):
    out = moto_s3.uri("runs", "over")
    storage.write_bytes(storage.join(out, STUDY_FILE), b"uploaded study")
    with study_folder(out, start_over=True) as folder:
        assert folder.private and not (folder.path / STUDY_FILE).exists()


def test_a_server_study_with_an_s3_out_fetches_and_syncs_nothing(moto_s3):
    out = moto_s3.uri("runs", "server")
    storage.write_bytes(storage.join(out, STUDY_FILE), b"uploaded study")
    with study_folder(out, embedded=False) as folder:
        assert folder.synced is None and not folder.private
        assert not (folder.path / STUDY_FILE).exists()
