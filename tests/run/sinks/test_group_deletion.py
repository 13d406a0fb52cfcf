"""A succeeded run's Pushgateway group deletion (`--delete-metrics-group`), against a gateway that takes
every push and refuses every deletion."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from support import strict_json
from support.forked_runs import start_foxhunt
from support.prom_services import unique_run_id
from support.run_cases import quick_argv


class PushesButNoDeletes(BaseHTTPRequestHandler):
    """A Pushgateway stand-in: pushes (PUT) answered 200, its metrics (GET) empty, deletions 500."""

    def log_message(self, *args) -> None:
        pass

    def _answer(self, status: int, body: bytes = b"") -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._answer(200, json.dumps({"status": "success", "data": []}).encode())

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._answer(200)

    def do_DELETE(self) -> None:
        self._answer(500)


def test_a_succeeded_runs_failed_group_deletion_is_counted_in_its_summary(
    tiny_fxcache, tiny_params, tmp_path
):
    server = ThreadingHTTPServer(("127.0.0.1", 0), PushesButNoDeletes)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        out, console = tmp_path / "out", tmp_path / "console.log"
        argv = quick_argv(
            tiny_fxcache, out, tiny_params, "--pushgateway", url, "--run-id", unique_run_id("delete")
        )
        argv += ["--delete-metrics-group", "--metrics-keep-seconds", "0"]
        process = start_foxhunt(argv, console)
        process.wait(timeout=600)
    finally:
        server.shutdown()
        server.server_close()
    assert process.returncode == 0, console.read_text()[-3000:]
    summary = strict_json.read(out / "summary.json")
    assert (summary["status"], summary["push_failures"]) == ("succeeded", 1)
    assert "deleting metrics group" in console.read_text()
