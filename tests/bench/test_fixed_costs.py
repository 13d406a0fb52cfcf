"""bench/fixed_costs.py: a phase timed once however deeply it re-enters itself, every phase of the table
found in the package, and medians over the runs that succeeded."""

import json
import subprocess
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import fixed_costs  # noqa: E402


def test_a_phase_that_calls_itself_is_timed_once_at_its_outermost_call():
    seconds: dict = {}

    def countdown(n: int) -> int:
        return n if n == 0 else timed(n - 1)

    timed = fixed_costs._timed("countdown", countdown, seconds)
    assert timed(3) == 0
    assert seconds["countdown"]["calls"] == 1
    timed(0)
    assert seconds["countdown"]["calls"] == 2


def _owner_and_name(module_name: str, attribute: str):
    owner = sys.modules[module_name]
    *classes, name = attribute.split(".")
    for cls in classes:
        owner = getattr(owner, cls)
    return owner, name


def test_every_phase_in_the_table_names_a_function_the_package_has(monkeypatch):
    for module_name, attribute, _ in fixed_costs.PHASES:  # monkeypatch puts each original back after
        __import__(module_name)
        owner, name = _owner_and_name(module_name, attribute)
        monkeypatch.setattr(owner, name, getattr(owner, name))
    fixed_costs.install({})
    for module_name, attribute, phase in fixed_costs.PHASES:
        owner, name = _owner_and_name(module_name, attribute)
        timed = getattr(owner, name)
        assert isinstance(timed, types.FunctionType) and timed.__wrapped__, f"{phase.strip()} not wrapped"


def test_the_phase_medians_leave_out_a_failed_run():
    def run(wall: float, code: int = 0) -> dict:
        return {"exit_code": code, "wall_seconds": wall, "phases": {"imports": {"wall": wall, "cpu": 1.0}}}

    table = fixed_costs.phase_medians([run(1.0), run(3.0), run(2.0), run(100.0, code=1)])
    assert table["phases"]["imports"]["wall"]["median"] == 2.0
    assert table["process"]["wall_seconds"] == {"n": 3, "median": 2.0, "min": 1.0, "max": 3.0}


def test_the_teardown_splits_at_the_exit_handlers_marks():
    marks = {"returned": 10.0, "atexit_first": 10.25, "atexit_last": 10.75}
    split = fixed_costs.exit_split(2.0, marks)
    assert split == {"before_handlers": 0.25, "handlers": 0.5, "after_handlers": 1.25}
    assert fixed_costs.exit_split(2.0, {"returned": 10.0}) is None


def test_a_child_process_records_when_its_exit_handlers_began_and_ended(tmp_path):
    out = tmp_path / "phases.json"
    script = (
        "import atexit, sys, time, json; sys.path.insert(0, sys.argv[2]); import fixed_costs as f\n"
        "atexit.register(f.mark_exit, 'atexit_last', sys.argv[1])\n"
        "atexit.register(time.sleep, 0.2)  # a slow handler between the marks\n"
        "open(sys.argv[1], 'w').write(json.dumps({'exit_code': 0}))\n"
        "f.mark_exit('returned'); atexit.register(f.mark_exit, 'atexit_first')\n"
    )
    bench = str(Path(fixed_costs.__file__).parent)
    subprocess.run([sys.executable, "-c", script, str(out), bench], check=True, timeout=120)
    marks = json.loads(out.read_text())["exit_marks"]
    assert marks["returned"] <= marks["atexit_first"]
    assert marks["atexit_last"] - marks["atexit_first"] >= 0.2
