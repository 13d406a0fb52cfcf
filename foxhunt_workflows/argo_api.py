"""A small client of the Argo Server's REST API: configured like the argo CLI, bounded in time.

Every request has a connect timeout and a read timeout, and the read timeout bounds the whole
answer, not one read: a server that trickles a byte a second cannot stretch a request past it. All
requests together stay inside one `Deadline` (the submit command's `--timeout`). Both limits are
held twice: each socket read waits at most the time left (and reads at most one chunk), and a
watchdog shuts the socket down when the time is up, whatever the reads are doing (headers, TLS).
An answer is at most MAX_ANSWER_BYTES and its JSON at most MAX_JSON_DEPTH deep. Failures are one-line `ArgoError`s; the ones worth another try (no connection, no
answer, a 5xx from the server or a proxy in front of it) are `TransientError`s.
"""

from __future__ import annotations

import http.client
import json
import re
import ssl
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from foxhunt_workflows.arguments import SubmitUsageError
from foxhunt_workflows.bounded_read import MAX_JSON_DEPTH, AnswerTimeout, Watchdog, json_depth, read_answer


class ArgoError(Exception):
    """A request that failed; the message is one line that says what to change, where it can."""


class TransientError(ArgoError):
    """A failure that may pass: the connection, a timeout, or a 5xx answer."""


class Unreachable(TransientError):
    """No connection could be made, so nothing was sent: always safe to try again."""


class DeadlineExceeded(ArgoError):
    """The command's `--timeout` ran out."""


@dataclass(frozen=True)
class Timeouts:
    """Seconds to wait for a connection and for each read of an answer."""

    connect: float = 10.0
    read: float = 30.0


@dataclass
class Deadline:
    """A point in time (by `clock`) after which nothing may wait; None: no deadline."""

    at: float | None
    clock: Callable[[], float] = time.monotonic

    @classmethod
    def after(cls, seconds: float | None, clock: Callable[[], float] = time.monotonic) -> Deadline:
        """The deadline `seconds` from now (None: never)."""
        return cls(None if seconds is None else clock() + seconds, clock)

    def remaining(self) -> float | None:
        """Seconds left (never negative), or None without a deadline."""
        return None if self.at is None else max(0.0, self.at - self.clock())

    def sooner(self, seconds: float) -> Deadline:
        """This deadline or `seconds` from now, whichever comes first."""
        at = self.clock() + seconds
        return Deadline(at if self.at is None else min(self.at, at), self.clock)

    def bound(self, seconds: float) -> float:
        """`seconds`, shortened to what is left; DeadlineExceeded when nothing is."""
        left = self.remaining()
        if left is None:
            return seconds
        if left <= 0:
            raise DeadlineExceeded("the --timeout ran out")
        return min(seconds, left)


def _env_flag(env: Mapping[str, str], name: str, *, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise SubmitUsageError(f"{name} must be true or false, not {raw!r}")


def _bearer(token: str) -> str | None:
    # `argo auth token` prints "Bearer ...", but people also export the bare token.
    token = token.strip()
    if not token:
        return None
    return token if token.lower().startswith("bearer ") else f"Bearer {token}"


_BEARER = re.compile(r"\b(bearer)\s+[^\s\"',;]+", re.IGNORECASE)
MIN_TOKEN_CHARS = 4  # a shorter token would mask ordinary words
_HOST_PORT = re.compile(r"(?P<host>[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])(:(?P<port>[^:]*))?")


def _check_host_port(server: str) -> None:
    """ARGO_SERVER as the argo CLI takes it: a host name or [IPv6], then an optional port 1-65535."""
    match = _HOST_PORT.fullmatch(server)
    port = match.group("port") if match else None
    if "@" in server:  # never echoed: the part before @ may be a password
        raise SubmitUsageError("ARGO_SERVER is host:port without credentials (put the token in ARGO_TOKEN)")
    if match is None or (port is not None and not (port.isdigit() and 1 <= int(port) <= 65535)):
        raise SubmitUsageError(f"ARGO_SERVER must be host:port (a port from 1 to 65535), not {server!r}")


@dataclass(frozen=True)
class ArgoServer:
    """Where and how to reach the Argo Server, read from the argo CLI's environment variables."""

    url: str
    namespace: str
    token: str | None
    verify_ssl: bool

    @classmethod
    def from_env(cls, env: Mapping[str, str], namespace: str | None = None) -> ArgoServer:
        """ARGO_SERVER (host:port), ARGO_SECURE, ARGO_INSECURE_SKIP_VERIFY, ARGO_BASE_HREF, ARGO_TOKEN, ARGO_NAMESPACE."""
        server = env.get("ARGO_SERVER", "").strip()
        if not server:
            raise SubmitUsageError("ARGO_SERVER is not set (host:port of the Argo Server)")
        if "://" in server:
            raise SubmitUsageError(
                f"ARGO_SERVER is host:port without a scheme (set ARGO_SECURE instead): {server}"
            )
        _check_host_port(server)
        scheme = "https" if _env_flag(env, "ARGO_SECURE", default=True) else "http"
        base_href = env.get("ARGO_BASE_HREF", "").strip("/")
        url = f"{scheme}://{server}/" + (f"{base_href}/" if base_href else "")
        return cls(
            url=url,
            namespace=namespace or env.get("ARGO_NAMESPACE") or "default",
            token=_bearer(env.get("ARGO_TOKEN", "")),
            verify_ssl=not _env_flag(env, "ARGO_INSECURE_SKIP_VERIFY", default=False),
        )

    def shown(self, text: str) -> str:
        """`text` fit to print: this server's token and any `Bearer` credential masked (a server
        or proxy may echo the Authorization header back in an error or a Workflow)."""
        raw = (self.token or "").partition(" ")[2].strip()
        if len(raw) >= MIN_TOKEN_CHARS:
            text = text.replace(raw, "***")
        return _BEARER.sub(lambda match: f"{match.group(1)} ***", text)

    @property
    def secure(self) -> bool:
        """True when the server is reached over https."""
        return self.url.startswith("https://")


def _proxy_for(server: ArgoServer) -> urllib.parse.SplitResult | None:
    """The proxy the environment names for the server's scheme (HTTPS_PROXY, NO_PROXY, ...), if any."""
    parts = urllib.parse.urlsplit(server.url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")


def _connection(server: ArgoServer, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    """A connection to the server (through a proxy where one is set) and the URL prefix of requests."""
    parts = urllib.parse.urlsplit(server.url)
    host, port = parts.hostname or "", parts.port or (443 if server.secure else 80)
    proxy = _proxy_for(server)
    connect_host, connect_port = (proxy.hostname or "", proxy.port or 80) if proxy else (host, port)
    if not server.secure:
        # A plain-http proxy takes the absolute URL; a server, the path.
        prefix = server.url if proxy else parts.path
        return http.client.HTTPConnection(connect_host, connect_port, timeout=timeout), prefix
    context = ssl.create_default_context()
    if not server.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    connection = http.client.HTTPSConnection(connect_host, connect_port, timeout=timeout, context=context)
    if proxy:
        connection.set_tunnel(host, port)
    return connection, parts.path


def _message(body: bytes) -> str:
    try:
        data = json.loads(body)
        text = str(data.get("message") or data.get("error") or "") if isinstance(data, dict) else ""
    except ValueError:
        text = body.decode("utf-8", "replace")
    return " ".join(text.split())[:300]


def _status_error(server: ArgoServer, status: int, body: bytes, what: str) -> ArgoError:
    message = server.shown(_message(body))
    if status == 400 and "HTTPS server" in body.decode("utf-8", "replace"):
        return ArgoError(f"{server.url} speaks https, not http: unset ARGO_SECURE (or set ARGO_SECURE=true)")
    if status == 401:
        return ArgoError(f"{what}: the Argo Server refused the token (401 {message}): check ARGO_TOKEN")
    if status == 403:
        return ArgoError(
            f"{what}: forbidden in namespace {server.namespace!r} (403 {message}): "
            "check that ARGO_TOKEN may submit there and ARGO_NAMESPACE / -n"
        )
    if status == 404:
        return ArgoError(
            f"{what}: not found in namespace {server.namespace!r} (404 {message}): "
            "check ARGO_NAMESPACE / -n and that the foxhunt chart is installed there"
        )
    error = TransientError if status >= 500 else ArgoError
    return error(f"{what}: the Argo Server answered {status} {message}".rstrip())


def _exchange(server, method, path, body, timeouts, deadline, what) -> tuple[int, bytes]:
    headers = {"Accept": "application/json"}
    if server.token:
        headers["Authorization"] = server.token
    if body is not None:
        headers["Content-Type"] = "application/json"
    connection, prefix = _connection(server, deadline.bound(timeouts.connect))
    try:
        try:
            connection.connect()
        except ssl.SSLError:
            raise
        except OSError as error:
            reason = "timed out" if isinstance(error, TimeoutError) else error.strerror or str(error)
            raise Unreachable(f"{what}: cannot connect to {server.url}: {reason}") from None
        # From the connection on, the request and its whole answer share one limit.
        limit = deadline.sooner(timeouts.read)
        sock = connection.sock
        watchdog = Watchdog(sock, limit.bound(timeouts.read))
        try:
            sock.settimeout(limit.bound(timeouts.read))
            connection.request(method, prefix + path, body=body, headers=headers)
            return read_answer(sock, method, timeouts, limit)
        except (DeadlineExceeded, TimeoutError):
            raise AnswerTimeout() from None
        except (OSError, http.client.HTTPException):
            if watchdog.fired.is_set() or limit.remaining() == 0:
                raise AnswerTimeout() from None
            raise
        finally:
            watchdog.stop()
    finally:
        connection.close()


def _json_object(server: ArgoServer, status: int, answer: bytes, what: str) -> dict[str, Any]:
    """The answer's JSON object; ArgoError when it is no JSON, no object, or nested too deep."""
    too_deep = ArgoError(f"{what}: {server.url} answered JSON nested over {MAX_JSON_DEPTH} deep: refused")
    try:
        data = json.loads(answer)
    except RecursionError:
        raise too_deep from None
    except ValueError:
        raise ArgoError(f"{what}: {server.url} answered {status} with something other than JSON") from None
    if json_depth(data) > MAX_JSON_DEPTH:
        raise too_deep
    if not isinstance(data, dict):
        raise ArgoError(f"{what}: {server.url} answered {status} with JSON that is not an object")
    return data


def request_json(
    server: ArgoServer,
    method: str,
    path: str,
    body: Mapping[str, Any] | None = None,
    *,
    timeouts: Timeouts,
    deadline: Deadline,
    what: str,
) -> dict[str, Any]:
    """One request to the Argo Server's API, its JSON answer as a dict; ArgoError on any failure."""
    payload = None if body is None else json.dumps(body).encode()
    try:
        status, answer = _exchange(server, method, path.lstrip("/"), payload, timeouts, deadline, what)
    except Unreachable:
        if deadline.remaining() == 0:
            raise DeadlineExceeded(
                f"{what}: no connection to {server.url} before the --timeout ran out"
            ) from None
        raise
    except DeadlineExceeded:
        raise DeadlineExceeded(f"{what}: the --timeout ran out") from None
    except (AnswerTimeout, TimeoutError) as error:
        whole = " (in full)" if isinstance(error, AnswerTimeout) else ""
        if deadline.remaining() == 0:
            raise DeadlineExceeded(
                f"{what}: no answer{whole} from {server.url} before the --timeout ran out"
            ) from None
        within = f"the --read-timeout ({timeouts.read:g} s)" if whole else "the time allowed"
        raise TransientError(f"{what}: no answer{whole} from {server.url} within {within}") from None
    except ssl.SSLError as error:
        if "WRONG_VERSION_NUMBER" in str(error) or "record layer" in str(error):
            raise ArgoError(f"{what}: {server.url} speaks http, not https: set ARGO_SECURE=false") from None
        hint = (
            "; ARGO_INSECURE_SKIP_VERIFY=true skips the check"
            if isinstance(error, ssl.SSLCertVerificationError)
            else ""
        )
        raise ArgoError(f"{what}: TLS with {server.url} failed: {error.reason or error}{hint}") from None
    except (http.client.BadStatusLine, ConnectionResetError) as error:
        hint = (
            "" if server.secure else "; if the Argo Server uses TLS, unset ARGO_SECURE (https is the default)"
        )
        raise TransientError(
            f"{what}: {server.url} gave no HTTP answer ({type(error).__name__}){hint}"
        ) from None
    except (OSError, http.client.HTTPException) as error:
        reason = (
            error.strerror
            if isinstance(error, OSError) and error.strerror
            else str(error) or type(error).__name__
        )
        raise TransientError(f"{what}: cannot reach {server.url}: {reason}") from None
    if status >= 400:
        raise _status_error(server, status, answer, what)
    return _json_object(server, status, answer, what)


__all__ = [
    "ArgoError",
    "ArgoServer",
    "Deadline",
    "DeadlineExceeded",
    "Timeouts",
    "TransientError",
    "request_json",
]
