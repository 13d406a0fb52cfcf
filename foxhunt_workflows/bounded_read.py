"""Reading an HTTP answer within a hard time limit, and bounds on what an answer may be.

Two guards hold the limit independently: each socket read waits at most the time left and reads at
most one chunk (`read1`: one `recv`, so a trickle cannot renew the timeout inside a read), and a
watchdog thread shuts the socket down when the time is up, which also ends reads this code does
not drive (the status line and headers, TLS).
"""

from __future__ import annotations

import http.client
import socket
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from foxhunt_workflows.argo_api import Deadline, Timeouts

CHUNK = 64 * 1024
# A Workflow with thousands of nodes is a few MiB (Argo offloads bigger node lists to its database).
MAX_ANSWER_BYTES = 64 * 1024 * 1024
# A Workflow is nested about 12 deep; json and yaml recurse, so a deeper answer is refused unread.
MAX_JSON_DEPTH = 64


class Watchdog:
    """Shuts a socket down at a deadline, so that no read (headers, body, TLS) outlasts it."""

    def __init__(self, sock: socket.socket, seconds: float) -> None:
        self.fired = threading.Event()
        self._sock = sock
        self._timer = threading.Timer(seconds, self._cut)
        self._timer.daemon = True
        self._timer.start()

    def _cut(self) -> None:
        self.fired.set()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed: nothing left to wait on

    def stop(self) -> None:
        """Cancel the cut (the exchange ended in time)."""
        self._timer.cancel()


class AnswerTimeout(Exception):
    """The whole answer did not come within the request's time."""


def read_answer(sock: socket.socket, method: str, timeouts: Timeouts, limit: Deadline) -> tuple[int, bytes]:
    """Status and body of the answer on `sock`, each socket read bounded by what is left of `limit`."""
    # Read the answer from our own reference to the socket: http.client's getresponse() would
    # close the connection's socket for an HTTP/1.0 answer, and with it the per-read timeouts.
    response = http.client.HTTPResponse(sock, method=method)
    response.begin()
    chunks: list[bytes] = []
    size = 0
    while True:
        sock.settimeout(limit.bound(timeouts.read))
        chunk = response.read1(CHUNK)  # one socket read at most: each waits only the time left
        if not chunk:
            break
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise http.client.HTTPException(f"an answer over {MAX_ANSWER_BYTES // 2**20} MiB")
        chunks.append(chunk)
    if response.length:  # the server closed before sending what its Content-Length said
        raise http.client.IncompleteRead(b"".join(chunks), response.length)
    return response.status, b"".join(chunks)


def json_depth(value: object) -> int:
    """How deep a parsed JSON value nests, counted without recursing."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            inner = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in inner)
    return deepest
