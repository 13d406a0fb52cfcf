"""A search says how long it has left, from this process's own pace."""

from __future__ import annotations

from foxhunt.search.driver import time_left


def test_the_estimate_is_this_processs_pace_times_the_trials_left():
    # 3 trials done here in 9 minutes: 3 min a trial; 5 left: about 15 min.
    assert time_left(540.0, 3, 5) == "; about 15 min left (3.0 min a trial here)"


def test_trials_finished_by_other_workers_do_not_speed_up_the_pace():
    # Only the trials this process finished count: 1 done here in 4 minutes, 2 left → 8 min.
    assert time_left(240.0, 1, 2) == "; about 8 min left (4.0 min a trial here)"


def test_no_estimate_before_a_first_trial_ends_here_or_when_none_remain():
    assert time_left(100.0, 0, 4) == ""
    assert time_left(100.0, 2, 0) == ""
