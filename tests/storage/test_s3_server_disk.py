"""The test S3 server refuses to start on a disk where SeaweedFS would keep its volumes read-only (under 1%
free), with one message naming the folder, instead of every write timing out after minutes."""

from collections import namedtuple
from pathlib import Path

import pytest
from support.s3_server import check_free_space

Usage = namedtuple("Usage", "total used free")
TOTAL = 252 * 2**30


def test_a_disk_under_one_percent_free_is_refused_naming_the_folder():
    # Catches: no check (each write times out after 10 attempts), or a threshold on used rather than free.
    with pytest.raises(RuntimeError, match=r"/data/weed: 1\.0 GiB free of 252 GiB"):
        check_free_space(Path("/data/weed"), usage=lambda _: Usage(TOTAL, TOTAL - 2**30, 2**30))


def test_a_disk_with_two_percent_free_starts():
    check_free_space(Path("/data/weed"), usage=lambda _: Usage(TOTAL, int(0.98 * TOTAL), int(0.02 * TOTAL)))
