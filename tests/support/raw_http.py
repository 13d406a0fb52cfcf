"""An HTTP server on 127.0.0.1 whose answers are scripted byte by byte: malformed, slow, trickled.

Each connection gets the next answer of the script (the last one repeats): a function that writes
to the socket. Trickling answers stop by themselves after `for_seconds`, so a client that fails to
bound its wait still ends (and its test fails on time rather than hanging).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator

Answer = Callable[[socket.socket, threading.Event], None]


def json_answer(body: object, status: int = 200) -> Answer:
    """A whole answer at once: `status` and `body` (JSON-encoded unless bytes)."""
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()

    def send(conn: socket.socket, stop: threading.Event) -> None:
        head = (
            f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
        )
        conn.sendall(head.encode() + payload)

    return send


def trickle(head: bytes, *, every: float = 0.05, for_seconds: float = 6.0) -> Answer:
    """`head` at once, then one byte every `every` seconds until `for_seconds` have passed."""

    def send(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(head)
        until = time.monotonic() + for_seconds
        while time.monotonic() < until and not stop.wait(every):
            conn.sendall(b" ")

    return send


# A 200 that promises 100 MB and sends a byte at a time.
TRICKLED_BODY = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{"
# A 200 whose headers never end.
TRICKLED_HEADERS = b"HTTP/1.1 200 OK\r\nX-Slow: "


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


@contextlib.contextmanager
def scripted_server(answers: list[Answer]) -> Iterator[int]:
    """A server on a free port of 127.0.0.1 answering connection i with answers[i]; yields the port."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    script = list(answers)

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                _read_request(conn)
                (script.pop(0) if len(script) > 1 else script[0])(conn, stop)
            except OSError:
                pass  # the client hung up: what a bounded client does

    def accept_loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # wakes the accept loop
        listener.close()
