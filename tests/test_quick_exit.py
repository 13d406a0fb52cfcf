"""A console command's process ends without the interpreter's teardown once its work is written."""

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from foxhunt import collector, quick_exit
from foxhunt.data.fxcache import read_fxcache

ROOT = Path(__file__).resolve().parents[1]

# A console process with an exit handler of its own: it prints only if the interpreter's teardown runs.
CONSOLE = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('teardown ran', flush=True))\n"
    "from foxhunt.cli import main\n"
    "sys.argv = ['foxhunt', *sys.argv[1:]]\n"
    "print('before main')\n"
    "sys.exit(main())\n"
)


def console(*argv: str, prelude: str = "", **env: str) -> subprocess.CompletedProcess:
    """CONSOLE (after `prelude`'s lines) run as its own process on `argv`, with `env` added to the environment."""
    environ = {k: v for k, v in os.environ.items() if k != quick_exit.FULL_TEARDOWN_ENV}
    environ.update(PYTHONPATH=str(ROOT / "trainer_image"), **env)
    command = [sys.executable, "-c", prelude + CONSOLE, *argv]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=environ)


@pytest.fixture
def not_owned():
    """The test process as a library caller's: restored after a test marks it as a command's own."""
    yield
    collector.own_process(False)


def test_a_console_command_skips_the_teardown_and_keeps_its_output_and_exit_code(tmp_path):
    done = console("train", "--fxcache", str(tmp_path / "absent.arrow"), "--out", str(tmp_path / "run"))
    assert done.returncode == 2
    assert "teardown ran" not in done.stdout
    assert done.stdout.startswith("before main")  # what Python buffered before the exit reached the pipe
    assert "foxhunt train: error:" in done.stderr and "absent.arrow" in done.stderr


def test_a_console_command_that_succeeds_has_written_everything_before_it_ends(tmp_path):
    bars = ROOT / "tests" / "data" / "EURUSD_M1_2018_head.parquet"
    done = console("precompute", "--bars", str(bars), "--out", str(tmp_path / "eurusd.arrow"))
    assert done.returncode == 0, done.stderr
    assert "teardown ran" not in done.stdout
    assert len(read_fxcache(str(tmp_path / "eurusd.arrow")).timestamp) > 0  # its checksum verified


def test_a_quick_exit_takes_the_helper_processes_left_running_with_it(tmp_path):
    prelude = (
        "import subprocess, sys\n"
        "helper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'],\n"
        "                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print('helper', helper.pid, flush=True)\n"
    )
    bars = ROOT / "tests" / "data" / "EURUSD_M1_2018_head.parquet"
    done = console("precompute", "--bars", str(bars), "--out", str(tmp_path / "c.arrow"), prelude=prelude)
    assert done.returncode == 0, done.stderr
    assert not running(int(done.stdout.split()[1]))


def running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie awaiting its new parent's reaping is not)."""
    for _ in range(50):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        if state in ("Z", "X"):
            return False
        time.sleep(0.1)
    return True


def test_helper_processes_are_this_process_s_children_and_theirs():
    grandchild = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    child = subprocess.Popen([sys.executable, "-c", grandchild])
    try:
        for _ in range(100):
            below = quick_exit.helper_processes(child.pid)
            if below:
                break
            time.sleep(0.05)
        assert len(below) == 1
        assert [child.pid, *below] == [p for p in quick_exit.helper_processes() if p in (child.pid, *below)]
    finally:
        for pid in quick_exit.helper_processes(child.pid):
            os.kill(pid, 9)
        child.kill()
        child.wait()


def test_the_full_teardown_setting_keeps_the_interpreters_exit(tmp_path):
    done = console(
        "train",
        "--fxcache",
        str(tmp_path / "absent.arrow"),
        "--out",
        str(tmp_path / "run"),
        **{quick_exit.FULL_TEARDOWN_ENV: "1"},
    )
    assert done.returncode == 2
    assert "teardown ran" in done.stdout


def test_a_live_child_process_is_work_still_owed():
    import multiprocessing

    release = multiprocessing.get_context("spawn").Event()
    child = multiprocessing.get_context("spawn").Process(target=release.wait, name="pictures", daemon=True)
    child.start()
    try:
        assert "pictures" in quick_exit.owed_work()
    finally:
        release.set()
        child.join()
    assert "pictures" not in quick_exit.owed_work()


@pytest.mark.parametrize("daemon, owed", [(False, True), (True, False)])
def test_a_running_thread_is_owed_work_unless_it_is_a_daemon(daemon, owed):
    release = threading.Event()
    worker = threading.Thread(target=release.wait, name="uploader", daemon=daemon)
    worker.start()
    try:
        assert ("uploader" in quick_exit.owed_work()) is owed
    finally:
        release.set()
        worker.join()
    assert "uploader" not in quick_exit.owed_work()


def test_leave_returns_while_a_thread_still_runs_in_the_commands_own_process(not_owned):
    collector.own_process()
    release = threading.Event()
    worker = threading.Thread(target=release.wait, name="uploader")
    worker.start()
    try:
        quick_exit.leave(0)  # had it left, this test's process would be gone
    finally:
        release.set()
        worker.join()


def test_leave_returns_in_a_library_callers_process(not_owned):
    collector.own_process(False)
    quick_exit.leave(0)


def test_main_with_an_argument_list_never_ends_the_process(not_owned, tmp_path):
    from foxhunt.cli import main

    collector.own_process()  # even marked (an earlier console call in this process), a caller's list returns
    assert main(["train", "--fxcache", str(tmp_path / "absent.arrow"), "--out", str(tmp_path / "run")]) == 2
