"""A TCP proxy on 127.0.0.1 that breaks connections on request, for storage fault tests.

It sits between boto3 and a real S3 server. Faults are given per connection, in the order the
connections are accepted (`next_connections`), or for every connection (`every_connection`):
reset at once, cut or stall the server's response after N bytes, cut the client's request after
N bytes, invert one byte of the response (a corruption TCP did not catch), or call a hook after N
bytes of response (to kill the server in the middle of a download).
Plain threads: one accept loop, one thread per connection.
"""

from __future__ import annotations

import selectors
import socket
import struct
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

CHUNK = 64 * 1024


@dataclass(frozen=True)
class Fault:
    """What happens to one proxied connection; the default forwards everything untouched."""

    reset: bool = False  # RST as soon as the connection is accepted
    cut_response_after: int | None = None  # bytes from the server, then RST on both sides
    stall_response_after: int | None = None  # bytes from the server, then silence, the connection held open
    cut_request_after: int | None = None  # bytes from the client, then RST on both sides
    hook_after: tuple[int, Callable[[], None]] | None = None  # (bytes from the server, called once)
    flip_response_byte: int | None = None  # offset in the server's stream of one byte to invert


def _reset(sock: socket.socket) -> None:
    """Close with RST (linger 0) rather than FIN, as a crashed peer or a middlebox does."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


class FaultProxy:
    """Forwards 127.0.0.1:`port` to `upstream`, applying the faults it is given."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._queued: deque[Fault] = deque()
        self._every: Fault | None = None
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._sockets: set[socket.socket] = set()
        self.connections = 0
        threading.Thread(target=self._accept_loop, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def next_connections(self, *faults: Fault) -> None:
        """Apply these faults to the next connections, one each, in order."""
        with self._lock:
            self._queued.extend(faults)

    def every_connection(self, fault: Fault | None) -> None:
        """Apply `fault` to every new connection (after the queued ones); None stops it."""
        with self._lock:
            self._every = fault

    def stop(self) -> None:
        """Stop accepting and close every open connection."""
        self._stopped.set()
        self._listener.close()
        with self._lock:
            for sock in list(self._sockets):
                _reset(sock)
            self._sockets.clear()

    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                fault = self._queued.popleft() if self._queued else (self._every or Fault())
            threading.Thread(target=self._serve, args=(client, fault), daemon=True).start()

    def _serve(self, client: socket.socket, fault: Fault) -> None:
        if fault.reset:
            _reset(client)
            return
        try:
            server = socket.create_connection(self.upstream, timeout=5)
        except OSError:  # the server is down: the client sees its connection dropped
            _reset(client)
            return
        with self._lock:
            self._sockets.update((client, server))
        try:
            self._forward(client, server, fault)
        except OSError:
            pass  # either side went away: the connection ends like a crash
        finally:
            # One thread per connection and no blocked reader, so a close is an immediate RST.
            with self._lock:
                self._sockets.difference_update((client, server))
            _reset(client)
            _reset(server)

    def _forward(self, client: socket.socket, server: socket.socket, fault: Fault) -> None:
        """Copy both ways until either side closes, applying the fault's byte counts."""
        sent = {client: 0, server: 0}
        stop_at = {client: fault.cut_request_after, server: fault.cut_response_after}
        stall_at = fault.stall_response_after
        hook_at, hook = fault.hook_after or (None, None)
        with selectors.DefaultSelector() as selector:
            selector.register(client, selectors.EVENT_READ)
            selector.register(server, selectors.EVENT_READ)
            while not self._stopped.is_set():
                for key, _ in selector.select(timeout=0.2):
                    src = key.fileobj
                    dst = server if src is client else client
                    data = src.recv(CHUNK)
                    if not data:
                        return
                    at = sent[src]
                    if (
                        src is server
                        and fault.flip_response_byte is not None
                        and at <= fault.flip_response_byte < at + len(data)
                    ):
                        k = fault.flip_response_byte - at
                        data = data[:k] + bytes([data[k] ^ 0xFF]) + data[k + 1 :]
                    limit = stop_at[src]
                    if limit is not None and at + len(data) >= limit:
                        dst.sendall(data[: limit - at])
                        return  # cut: both sides reset
                    if src is server and stall_at is not None and at + len(data) >= stall_at:
                        dst.sendall(data[: stall_at - at])
                        selector.unregister(server)  # silence from now on; the client must time out
                        sent[src] = stall_at
                        continue
                    dst.sendall(data)
                    sent[src] = at + len(data)
                    if src is server and hook is not None and sent[src] >= hook_at:
                        hook()
                        hook = None
