"""The test S3 server keeps a fixed free-space floor of 256 MiB rather than SeaweedFS's 1% of the disk, and
refuses to start below it with one message naming the folder, instead of every write timing out after minutes."""

import shutil
from collections import namedtuple
from pathlib import Path

import pytest
from support.s3_server import MIN_FREE_BYTES, SeaweedProcess, check_free_space

Usage = namedtuple("Usage", "total used free")
TOTAL = 252 * 2**30


def test_a_disk_under_the_floor_is_refused_naming_the_folder():
    # Catches: no check (each write times out after 10 attempts), or a threshold on used rather than free.
    with pytest.raises(RuntimeError, match=r"/data/weed: 100 MiB free of 252 GiB, under the 256 MiB"):
        check_free_space(Path("/data/weed"), usage=lambda _: Usage(TOTAL, TOTAL - 100 * 2**20, 100 * 2**20))


def test_a_shared_disk_under_one_percent_free_starts():
    # A CI host once had 2.2 GiB free of 252 GiB: under SeaweedFS's default 1% floor, well over the tests' needs.
    assert MIN_FREE_BYTES == 256 * 2**20
    free = int(2.2 * 2**30)
    check_free_space(Path("/data/weed"), usage=lambda _: Usage(TOTAL, TOTAL - free, free))


def test_the_volume_server_keeps_the_floor_it_is_given(tmp_path):
    # Catches: the floor not reaching the volume server, which would then keep its default 1% of the disk.
    weed = SeaweedProcess(tmp_path, min_free=shutil.disk_usage(tmp_path).free + 2**40)
    server = weed.start(check_disk=False)
    try:
        client = server.client(read_timeout=1)
        with pytest.raises(Exception, match="(?i)timeout|InternalError"):
            client.put_object(Bucket=server.bucket, Key="over-the-floor", Body=b"x" * 1024)
    finally:
        weed.kill()
