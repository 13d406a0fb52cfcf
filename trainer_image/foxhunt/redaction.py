"""One redaction for every URL that can carry a secret: study storage, Pushgateway, S3 endpoint.

A URL from a Secret may hold a password in its userinfo (`user:PW@host`, where PW may itself contain
`@`, `/` or `#` when it was not percent-encoded), or in a query parameter (`?password=PW`). What a
run prints, logs, raises or writes shows such a URL only through `redact_url`, and `scrub_text`
cleans free text (a library's error message, a log line) of any URL (with or without a scheme: a
bare `user:PW@host` too) and of every secret value seen by `register`. A string that cannot be read
as a URL is shown as its scheme at most, never as given.

A registered value is masked only where it stands as that secret, never inside other text: as a
whole token (no letter or digit either side) when it has at least MIN_TOKEN_SECRET_CHARS
characters, and in a credential position (`password=...`, `"token": "..."`) at any length. So
AWS_SECRET_ACCESS_KEY=close masks no setting `close`, and a four-letter password no folder name.
"""

from __future__ import annotations

import base64
import functools
import logging
import os
import re
import threading
import urllib.parse
from collections.abc import Iterable

MASK = "***"
NOT_A_URL = "(not a URL)"
# Query parameters whose value is a credential (case-insensitive, anywhere in the name).
SECRET_PARAM = re.compile(r"pass|pwd|secret|token|key|sig|cred|auth", re.IGNORECASE)
# Environment variables whose value is a URL that may carry a password, or a secret in itself.
URL_VARIABLES = (
    "FOXHUNT_PUSHGATEWAY",
    "FOXHUNT_STUDY_STORAGE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "MLFLOW_TRACKING_URI",
)
SECRET_VARIABLES = (
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "ARGO_TOKEN",
    "FOXHUNT_COMPILE_CACHE_KEY",
    "MLFLOW_TRACKING_PASSWORD",
    "MLFLOW_TRACKING_TOKEN",
)
# HTTP basic auth sends base64(user:password): a library that prints its headers prints that.
BASIC_AUTH_PAIRS = (("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"),)
MIN_SECRET_CHARS = 4  # shorter values would mask ordinary words in every line
MIN_TOKEN_SECRET_CHARS = 6  # masked as a whole token of free text from this length; shorter: credentials only
_CREDENTIAL_KEY = r"(?:pass\w*|pwd|secret\w*|token|\w*key|auth\w*|cred\w*)"
# Schemes whose userinfo without a password is a user name (a database login), not a bearer token.
USER_NAME_SCHEMES = re.compile(r"postgres(ql)?(\+\w+)?|mysql(\+\w+)?|sqlite", re.IGNORECASE)

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://(.*)", re.DOTALL)
_BARE_HOST = re.compile(r"[A-Za-z0-9_.-]+(:[0-9]+)?(/[A-Za-z0-9_./-]*)?")
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
# `user:PW@host` without a scheme, in free text: the password masked (a URL's was already).
_BARE_USERINFO = re.compile(r"(?<![\w/.%:-])([A-Za-z0-9._~+-]+):([^\s@/'\"]+)@(?=[A-Za-z0-9[])")
_registered: set[str] = set()
_registered_lock = threading.Lock()


def _printable(text: str) -> str:
    return "".join(ch if ch.isprintable() else "?" for ch in text)


def _redact_query(query: str) -> str:
    parts = []
    for part in re.split(r"([&;])", query):
        name, eq, _value = part.partition("=")
        parts.append(f"{name}={MASK}" if eq and SECRET_PARAM.search(name) else part)
    return "".join(parts)


def _redact_rest(rest: str) -> str:
    """Host, path and query of a URL: secret query values masked, the fragment dropped."""
    rest = rest.partition("#")[0]
    where, sep, query = rest.partition("?")
    return where + (sep + _redact_query(query) if sep else "")


def redact_url(url: object, *, bare_host: bool = True) -> str:
    """`url` fit to show: userinfo password (everything up to the last `@`) and secret query values
    masked, fragment dropped. With `bare_host`, `host:port` without a scheme is shown as given;
    anything else that is no URL is shown as NOT_A_URL."""
    if not isinstance(url, str):
        return NOT_A_URL
    text = url.strip()
    match = _SCHEME.fullmatch(text)
    if match is None:
        if "@" in text:  # user:PW@host without a scheme
            return f"{MASK}@{_printable(_redact_rest(text.rpartition('@')[2]))}"
        return text if bare_host and _BARE_HOST.fullmatch(text) else NOT_A_URL
    scheme, body = match.groups()
    if "@" in body:
        userinfo, _, rest = body.rpartition("@")
        user, colon, _password = userinfo.partition(":")
        plain_user = "/" not in user and "?" not in user
        if colon and plain_user:
            shown_user = f"{user}:{MASK}"
        elif not colon and plain_user and USER_NAME_SCHEMES.fullmatch(scheme):
            shown_user = user  # a login name, no password in the URL
        else:
            shown_user = MASK
        body = f"{shown_user}@{rest}"
        rest_start = len(shown_user) + 1
    else:
        rest_start = 0
    return _printable(f"{scheme}://{body[:rest_start]}{_redact_rest(body[rest_start:])}")


def url_secrets(url: str) -> list[str]:
    """The secret values `url` carries: its userinfo password (or the whole userinfo when it has no
    user name) and every secret query value."""
    match = _SCHEME.fullmatch(url.strip())
    body = match.group(2) if match else url.strip()
    login_scheme = match is not None and USER_NAME_SCHEMES.fullmatch(match.group(1)) is not None
    found = []
    if "@" in body:
        userinfo = body.rpartition("@")[0]
        user, colon, password = userinfo.partition(":")
        if colon or not login_scheme:
            found.append(password if colon else userinfo)
    query = body.rpartition("@")[2].partition("#")[0].partition("?")[2]
    for part in re.split(r"[&;]", query):
        name, eq, value = part.partition("=")
        if eq and SECRET_PARAM.search(name):
            found.append(value)
    found += [urllib.parse.unquote(value) for value in found]  # as a library may print it, decoded
    if "@" in body and ":" in body.rpartition("@")[0]:  # sent as HTTP basic auth (the Pushgateway)
        user, _, password = body.rpartition("@")[0].partition(":")
        found.append(basic_auth_value(urllib.parse.unquote(user), urllib.parse.unquote(password)))
    return [value for value in dict.fromkeys(found) if len(value) >= MIN_SECRET_CHARS]


def register(values: Iterable[str | None], *, urls: bool = True) -> None:
    """Remember secrets so that `scrub_text` masks them wherever they appear: with `urls`, the secrets
    inside each URL (and the URL's userinfo part); otherwise each value itself."""
    with _registered_lock:
        for value in values:
            if not value:
                continue
            found = url_secrets(value) if urls else [value]
            _registered.update(v for v in found if len(v) >= MIN_SECRET_CHARS)


def forget() -> None:
    """Drop every registered secret (a new command in the same process registers its own)."""
    with _registered_lock:
        _registered.clear()


def basic_auth_value(user: str, password: str) -> str:
    """The base64 credentials of an HTTP `Authorization: Basic` header."""
    return base64.b64encode(f"{user}:{password}".encode()).decode()


def register_environment(environ: dict[str, str] | None = None) -> None:
    """Register the secrets of every variable foxhunt reads credentials or secret-bearing URLs from."""
    env = os.environ if environ is None else environ
    register((env.get(name) for name in URL_VARIABLES), urls=True)
    register((env.get(name) for name in SECRET_VARIABLES), urls=False)
    for user_variable, password_variable in BASIC_AUTH_PAIRS:
        if env.get(password_variable):
            user = env.get(user_variable, "")
            register([basic_auth_value(user, env[password_variable])], urls=False)


@functools.lru_cache(maxsize=256)
def _secret_pattern(secret: str) -> re.Pattern[str]:
    """Where `secret` stands as a secret: a whole token (long enough), or after a credential's key."""
    value = re.escape(secret) + r"(?![A-Za-z0-9])"
    credential = rf"(?i:{_CREDENTIAL_KEY})[\"']?\s*[:=]\s*[\"']?{value}"
    if len(secret) < MIN_TOKEN_SECRET_CHARS:
        return re.compile(credential)
    return re.compile(rf"(?<![A-Za-z0-9]){value}|{credential}")


def _mask_secret(secret: str, text: str) -> str:
    return _secret_pattern(secret).sub(lambda m: m.group(0)[: len(m.group(0)) - len(secret)] + MASK, text)


def scrub_urls(text: object) -> str:
    """`text` with every URL in it redacted, a bare `user:PW@host` too: by structure alone, the same
    whatever secrets are registered (what the manifest compares on a resume must not depend on them)."""
    shown = _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), str(text))
    return _BARE_USERINFO.sub(lambda m: f"{m.group(1)}:{MASK}@", shown)


def scrub_text(text: object) -> str:
    """`text` with every URL in it redacted (a bare `user:PW@host` too) and every registered secret
    masked where it stands as a secret (the module's docstring says where)."""
    shown = scrub_urls(text)
    with _registered_lock:
        secrets = sorted(_registered, key=len, reverse=True)  # the longest first: no partial leftovers
    for secret in secrets:
        shown = _mask_secret(secret, shown)
    return shown


def scrub_record(value, *, registered: bool = True):
    """A JSON-like value (dicts, lists, strings) with every string scrubbed (`registered`: URLs and
    registered secrets, else URLs alone, as `scrub_urls`); other values unchanged."""
    if isinstance(value, str):
        return scrub_text(value) if registered else scrub_urls(value)
    if isinstance(value, dict):
        return {key: scrub_record(inner, registered=registered) for key, inner in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_record(inner, registered=registered) for inner in value]
    return value


class ScrubFilter(logging.Filter):
    """A logging filter that renders each record's message scrubbed (arguments and traceback included)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format: shown as its format only
            message = str(record.msg)
        record.msg, record.args = scrub_text(message), None
        if record.exc_info:  # a traceback's text holds the exception's message, URL and all
            record.exc_text = scrub_text(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        elif record.exc_text:
            record.exc_text = scrub_text(record.exc_text)
        if record.stack_info:
            record.stack_info = scrub_text(record.stack_info)
        return True


def install_log_filter() -> None:
    """Every log line foxhunt's process prints passes through ScrubFilter: on the root logger's
    handlers, and on the last-resort handler Python uses when none is configured."""
    handlers = list(logging.getLogger().handlers) + ([logging.lastResort] if logging.lastResort else [])
    for handler in handlers:
        if not any(isinstance(f, ScrubFilter) for f in handler.filters):
            handler.addFilter(ScrubFilter())
