"""Real Prometheus and Pushgateway (Debian's binaries) on 127.0.0.1 for tests, started by the fixtures.

`pushgateway` (session) yields the URL of a Pushgateway that lives for the session; `prometheus`
(session) scrapes it every second with `honor_labels: true` and evaluates the chart's rules.
`own_pushgateway` (per test) yields a `Pushgateway` the test may kill. Groups stay in Prometheus' TSDB after deletion, so every test
uses its own run id (`unique_run_id`). `pipeline_runs` (session) are two real `foxhunt pipeline` runs,
started at once with different run ids, that pushed to the session Pushgateway.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from support import strict_json
from support.forked_runs import ForkedProcess, start_foxhunt

__all__ = [
    "Prometheus",
    "Pushgateway",
    "free_port",
    "PIPELINE_ARGS",
    "PipelineRun",
    "StartedPipeline",
    "finish_pipeline",
    "own_pushgateway",
    "pipeline_run",
    "pipeline_runs",
    "prom_workdir",
    "prometheus",
    "pushed_samples",
    "pushgateway",
    "session_pushgateway",
    "start_pipeline",
    "start_pushgateway",
    "unique_run_id",
]

CHART_RULES = Path(__file__).resolve().parents[2] / "helm" / "foxhunt" / "rules" / "foxhunt-rules.yaml"
STARTUP_TIMEOUT_S = 60.0
PIPELINE_TIMEOUT_S = 300.0
# Small enough for a few seconds per fold on 2 CPU cores; CPU and a fixed seed make results repeatable.
PIPELINE_ARGS = tuple(
    "--sample-bars 60000 --epochs 1 --max-folds 2 --train-days 20 --val-days 5 --step-days 5 --holdout-days 5 --seed 7 "
    "--device cpu".split()
)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def unique_run_id(prefix: str = "test") -> str:
    """A run id no other test (or earlier session in the same TSDB) has used."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _http_get(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.read()


def _wait_until(ready, what: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if ready():
                return
        except OSError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"{what} not ready after {STARTUP_TIMEOUT_S}s: {log.read_text()[-2000:]}")


def _binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(
            f"{name} not found: apt-get install -y --no-install-recommends prometheus prometheus-pushgateway"
        )
    return path


@dataclass
class Pushgateway:
    """A running Pushgateway process on loopback."""

    url: str
    process: subprocess.Popen

    def kill(self) -> None:
        """Stop it at once, the way a crashed or evicted gateway disappears."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)


def start_pushgateway(workdir: Path) -> Pushgateway:
    """Start a Pushgateway without persistence on a free port and wait for /-/ready."""
    port = free_port()
    log = workdir / f"pushgateway-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                _binary("prometheus-pushgateway"),
                f"--web.listen-address=127.0.0.1:{port}",
                "--persistence.file=",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    _wait_until(lambda: _http_get(f"{url}/-/ready", 1.0) is not None, "pushgateway", proc, log)
    return Pushgateway(url, proc)


@dataclass
class Prometheus:
    """A running Prometheus scraping the session's Pushgateway, with query helpers."""

    url: str
    process: subprocess.Popen

    def _api(self, path: str, params: dict) -> list:
        body = json.loads(_http_get(f"{self.url}{path}?{urllib.parse.urlencode(params)}"))
        if body.get("status") != "success":
            raise RuntimeError(f"{path} {params}: {body}")
        return body["data"]["result"]

    def query(self, promql: str) -> list:
        """Result of an instant query: a list of {"metric": labels, "value": [ts, "v"]}."""
        return self._api("/api/v1/query", {"query": promql})

    def query_range(self, promql: str, start: float, end: float, step: float = 1.0) -> list:
        """Result of a range query: a list of {"metric": labels, "values": [[ts, "v"], ...]}."""
        return self._api("/api/v1/query_range", {"query": promql, "start": start, "end": end, "step": step})

    def query_since(self, promql: str, start: float, step: float = 1.0) -> list:
        """Range query from `start` to one step past now.

        The range's points are start + k·step, so a range ending at now can stop up to a step before
        the latest scrape, which an instant query already sees; one step more always covers it.
        """
        return self.query_range(promql, start, time.time() + step, step)

    def wait_for(self, promql: str, count: int, timeout: float = 15.0) -> list:
        """Poll an instant query until it returns at least `count` series (push → scrape takes a second)."""
        deadline = time.monotonic() + timeout
        result: list = []
        while time.monotonic() < deadline:
            result = self.query(promql)
            if len(result) >= count:
                return result
            time.sleep(0.25)
        raise AssertionError(f"{promql}: {len(result)} series after {timeout}s, expected {count}: {result}")


def pushed_samples(pushgateway_url: str, run_id: str) -> dict[tuple[str, frozenset], float]:
    """Samples the Pushgateway exposes for one run id: {(sample name, labels without job/run_id/instance): value};
    a label with an empty value is left out, as Prometheus reads it (a run without an instrument name)."""
    text = _http_get(f"{pushgateway_url}/metrics").decode()
    samples: dict[tuple[str, frozenset], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.labels.get("run_id") != run_id:
                continue
            labels = frozenset(
                (k, v) for k, v in s.labels.items() if k not in ("job", "run_id", "instance") and v != ""
            )
            samples[(s.name, labels)] = s.value
    return samples


@pytest.fixture(scope="session")
def prom_workdir(tmp_path_factory) -> Path:
    """A folder for the session's Prometheus config, TSDB and service logs."""
    return tmp_path_factory.mktemp("prom")


@pytest.fixture(scope="session")
def session_pushgateway(prom_workdir) -> Pushgateway:
    """The session's Pushgateway process (`pushgateway` yields its URL)."""
    gateway = start_pushgateway(prom_workdir)
    yield gateway
    gateway.kill()


@pytest.fixture(scope="session")
def pushgateway(session_pushgateway) -> str:
    """URL of a Pushgateway on 127.0.0.1 shared by the session (use a unique run id per test)."""
    return session_pushgateway.url


@pytest.fixture
def own_pushgateway(tmp_path) -> Pushgateway:
    """A Pushgateway for this test alone, which the test may kill."""
    gateway = start_pushgateway(tmp_path)
    yield gateway
    gateway.kill()


@pytest.fixture(scope="session")
def prometheus(pushgateway, prom_workdir) -> Prometheus:
    """Prometheus on 127.0.0.1 scraping the session Pushgateway every second, with a fresh TSDB."""
    port = free_port()
    target = urllib.parse.urlsplit(pushgateway).netloc
    config = prom_workdir / "prometheus.yml"
    # The chart's rules too, so recording rules and alerts are evaluated on the real runs.
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"rule_files:\n  - {CHART_RULES}\n"
        "scrape_configs:\n  - job_name: pushgateway\n    honor_labels: true\n"
        f"    static_configs:\n      - targets: ['{target}']\n"
    )
    tsdb = prom_workdir / f"tsdb-{uuid.uuid4().hex[:8]}"
    log = prom_workdir / "prometheus.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                _binary("prometheus"),
                f"--config.file={config}",
                f"--storage.tsdb.path={tsdb}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    prom = Prometheus(f"http://127.0.0.1:{port}", proc)

    def scraped_up() -> bool:
        targets = json.loads(_http_get(f"{prom.url}/api/v1/targets", 1.0))["data"]["activeTargets"]
        return any(t["health"] == "up" for t in targets)

    _wait_until(scraped_up, "prometheus", proc, log)
    yield prom
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@dataclass
class PipelineRun:
    """A finished `foxhunt pipeline` run: its id, output folder, console output and start time."""

    run_id: str
    out: Path
    output: str
    started: float

    @property
    def summary(self) -> dict:
        """The run's summary.json."""
        return strict_json.read(self.out / "summary.json")


@dataclass
class StartedPipeline:
    """A `foxhunt pipeline` process whose console output goes to a file (no pipe to fill up)."""

    run_id: str
    out: Path
    console: Path
    process: ForkedProcess
    started: float

    def output(self) -> str:
        """The console output so far."""
        return self.console.read_text()


def start_pipeline(workdir: Path, run_id: str, pushgateway: str) -> StartedPipeline:
    """Start the real `foxhunt pipeline` as a process of its own (forked with torch imported,
    tests/support/forked_runs.py) with the test sizes, outputs under `workdir`."""
    env = {k: v for k, v in os.environ.items() if k not in ("FOXHUNT_PUSHGATEWAY", "FOXHUNT_RUN_ID")}
    env["PYTHONUNBUFFERED"] = "1"
    out, console = workdir / "out", workdir / "console.log"
    started = time.time()
    argv = ["pipeline", "--out", str(out), "--pushgateway", pushgateway, "--run-id", run_id, *PIPELINE_ARGS]
    return StartedPipeline(run_id, out, console, start_foxhunt(argv, console, env), started)


def finish_pipeline(run: StartedPipeline) -> PipelineRun:
    """Wait for a started pipeline; a non-zero exit fails with its output."""
    run.process.wait(timeout=PIPELINE_TIMEOUT_S)
    if run.process.returncode != 0:
        raise AssertionError(
            f"foxhunt pipeline {run.run_id} exited {run.process.returncode}:\n{run.output()[-4000:]}"
        )
    return PipelineRun(run.run_id, run.out, run.output(), run.started)


@pytest.fixture(scope="session")
def pipeline_runs(pushgateway, prometheus, tmp_path_factory) -> tuple[PipelineRun, PipelineRun]:
    """Two real pipeline runs started at once with different run ids, both pushing to the session Pushgateway."""
    started = [
        start_pipeline(tmp_path_factory.mktemp(name), unique_run_id(name), pushgateway)
        for name in ("e2e-a", "e2e-b")
    ]
    return tuple(finish_pipeline(run) for run in started)


@pytest.fixture(scope="session")
def pipeline_run(request, pushgateway, prometheus, tmp_path_factory) -> PipelineRun:
    """One real pipeline run pushing to the session Pushgateway: the first of `pipeline_runs` when a test of
    this session asks for those too (a session makes two runs at most), else a run of its own."""
    if any("pipeline_runs" in getattr(item, "fixturenames", ()) for item in request.session.items):
        return request.getfixturevalue("pipeline_runs")[0]
    return finish_pipeline(start_pipeline(tmp_path_factory.mktemp("e2e"), unique_run_id("e2e"), pushgateway))
