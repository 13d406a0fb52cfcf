"""URLs checked before work: a Pushgateway a push can reach, a study storage a study can open.

Each refusal is a one-line UsageError (exit 2) that shows the URL only redacted.
"""

from __future__ import annotations

import urllib.parse

from foxhunt.errors import ConfigError
from foxhunt.redaction import redact_url

PUSHGATEWAY_SCHEMES = ("http", "https")


def pushgateway_problem(url: str) -> str | None:
    """What is wrong with a Pushgateway URL (http(s)://host[:port], or a bare host:port), or None."""
    full = url if "://" in url else f"http://{url}"
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        return "holds a space or a control character"
    try:
        parts = urllib.parse.urlsplit(full)
        port = parts.port
    except ValueError as exc:
        return f"is not a URL ({str(exc).split(':')[0]})"
    if parts.scheme not in PUSHGATEWAY_SCHEMES:
        return f"has scheme {parts.scheme or '(none)'!r}; expected http or https"
    if not parts.hostname:
        return "names no host"
    if "@" in (parts.path + parts.query + parts.fragment) or parts.fragment:
        return "has a password with a reserved character (/ ? # @) that is not percent-encoded"
    if port == 0:
        return "has port 0"
    return None


def check_pushgateway(url: str | None) -> str | None:
    """`url` when it is usable as a Pushgateway; ConfigError (exit 2, the URL redacted) when not."""
    if url:
        problem = pushgateway_problem(url)
        if problem:
            raise ConfigError(
                "run config", "pushgateway", f"{redact_url(url)} {problem} (like http://host:9091)"
            )
    return url
