"""Where a run's telemetry goes: the Pushgateway's URL (flag or environment), the run id that is the
grouping key of the run's metrics, and whether a run with that id is live on the Pushgateway."""

from __future__ import annotations

import http.client
import json
import logging
import os
import secrets
import time
import urllib.parse
import urllib.request
from datetime import datetime, timezone

from foxhunt.config import run_id_problem
from foxhunt.config.urls import check_pushgateway, pushgateway_credentials
from foxhunt.errors import UsageError
from foxhunt.redaction import basic_auth_value, redact_url, scrub_text

log = logging.getLogger(__name__)

DEFAULT_JOB = "foxhunt-train"


def resolve_run_id(cli_value: str | None) -> str:
    """The run id: the flag, else $FOXHUNT_RUN_ID, else $ARGO_WORKFLOW_NAME, else `local-<UTC time>-<6 hex>`.

    A run id is a label value and a path component, so one outside [A-Za-z0-9_.:-]{1,128} (or "." or
    "..", which an HTTP client folds into the path and the Pushgateway answers with a redirect) is a
    UsageError naming where it came from.
    """
    sources = (
        ("--run-id", cli_value),
        ("$FOXHUNT_RUN_ID", os.environ.get("FOXHUNT_RUN_ID")),
        ("$ARGO_WORKFLOW_NAME", os.environ.get("ARGO_WORKFLOW_NAME")),
    )
    for source, value in sources:
        if value:
            problem = run_id_problem(value)
            if problem:
                raise UsageError(f"{source}: run id {problem}")
            return value
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    return f"local-{stamp}-{secrets.token_hex(3)}"


def resolve_pushgateway(cli_value: str | None) -> str | None:
    """The Pushgateway URL: the flag, else $FOXHUNT_PUSHGATEWAY, else None (no pushes); ConfigError
    (exit 2, the URL redacted) when it is not a usable http(s) URL."""
    return check_pushgateway(cli_value or os.environ.get("FOXHUNT_PUSHGATEWAY") or None)


def has_host(url: str) -> bool:
    """True when a Pushgateway URL names a host (prometheus_client accepts a bare host:port and prefixes
    http:// itself)."""
    full = url if "://" in url else f"http://{url}"
    try:
        return bool(urllib.parse.urlsplit(full).hostname)
    except ValueError:
        return False


def _first_value(group: dict, name: str) -> float:
    metrics = group.get(name, {}).get("metrics") or [{}]
    return float(metrics[0].get("value", 0.0))


def live_run(
    pushgateway: str, run_id: str, *, stale_seconds: float, job: str = DEFAULT_JOB, timeout: float = 2.0
) -> dict | None:
    """The Pushgateway's group of a live run with this id: started, not finished, pushed within `stale_seconds`.

    Returns {"started": unix time, "last_push": unix time} or None; a Pushgateway that cannot be asked
    is logged and treated as holding no live run (metrics never stop a run).
    """
    plain, credentials = pushgateway_credentials(pushgateway)
    base = plain if "://" in plain else f"http://{plain}"
    request = urllib.request.Request(f"{base.rstrip('/')}/api/v1/metrics")
    if credentials is not None:  # userinfo is basic auth: urllib would take it for part of the host
        request.add_header("Authorization", f"Basic {basic_auth_value(*credentials)}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            groups = json.loads(resp.read())["data"]
    except (OSError, http.client.HTTPException, ValueError, KeyError) as exc:
        log.warning(
            "cannot ask %s whether run id %s is live (%s); going on",
            redact_url(pushgateway),
            run_id,
            scrub_text(exc),
        )
        return None
    for group in groups:
        if group.get("labels") != {"job": job, "run_id": run_id}:
            continue
        started = _first_value(group, "foxhunt_run_start_timestamp_seconds")
        ended = _first_value(group, "foxhunt_run_end_timestamp_seconds")
        last_push = _first_value(group, "push_time_seconds")
        if started > 0 and ended == 0 and time.time() - last_push < stale_seconds:
            return {"started": started, "last_push": last_push}
    return None


def refuse_live_run(pushgateway: str, run_id: str, *, stale_seconds: float) -> None:
    """UsageError when the Pushgateway holds a live run with this id (two runs would merge their series)."""
    live = live_run(pushgateway, run_id, stale_seconds=stale_seconds)
    if live is not None:
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(live["started"]))
        raise UsageError(
            f"run id {run_id} is live on {redact_url(pushgateway)} (started {started}, last push "
            f"{time.time() - live['last_push']:.0f}s ago); give this run another --run-id"
        )
