"""The fxcache's columns are read straight from the mapped Arrow buffers: the values Arrow's own
`to_numpy` gives, at any offset, without the pandas import that `to_numpy` costs a run's load."""

import numpy as np
import pyarrow as pa
import pytest
from support.fresh_process import loaded_after
from support.fxcache_cases import make_table, write_good

from foxhunt.data.fxcache import _mapped_values


def test_a_sliced_column_reads_the_values_arrow_gives():
    values = pa.array(np.arange(10, dtype=np.int64) * 7).slice(3, 5)
    np.testing.assert_array_equal(_mapped_values(values, np.int64), values.to_numpy(zero_copy_only=True))


def test_a_flattened_list_column_reads_the_values_arrow_gives():
    lists = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(12, dtype=np.float32)), 3).slice(1, 2)
    flat = lists.flatten()
    assert flat.offset == 3  # the child array starts inside the buffer
    np.testing.assert_array_equal(_mapped_values(flat, np.float32), np.arange(3, 9, dtype=np.float32))


def test_a_column_of_another_width_is_refused():
    with pytest.raises(TypeError, match="int32"):
        _mapped_values(pa.array([1, 2], type=pa.int32()), np.int64)


def test_loading_an_fxcache_imports_no_pandas(tmp_path):
    path = tmp_path / "cache.arrow"
    write_good(path, make_table())
    code = f"from foxhunt.data.fxcache import read_fxcache; assert len(read_fxcache({str(path)!r})) == 500"
    assert loaded_after(code, ["pandas", "pyarrow"]) == ["pyarrow"]
