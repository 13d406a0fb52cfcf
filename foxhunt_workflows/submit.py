"""Submit a foxhunt WorkflowTemplate through the Argo Server API and follow it, without Hera.

The submission is the same request `argo submit --from workflowtemplate/NAME` makes. Following a
workflow polls it; connection errors and 5xx answers are retried with backoff (a proxy's single 502
is not the end of a six-hour run), everything else ends the wait at once.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from foxhunt_workflows.answers import check_dry_run, check_workflow, created_name
from foxhunt_workflows.argo_api import (
    ArgoError,
    ArgoServer,
    Deadline,
    DeadlineExceeded,
    Timeouts,
    TransientError,
    Unreachable,
    request_json,
)
from foxhunt_workflows.arguments import SUBMITTED_BY, SubmitUsageError
from foxhunt_workflows.params import PIPELINE_TEMPLATE

DONE_PHASES = ("Succeeded", "Failed", "Error")
SUBMITTED_BY_LABEL = "=".join(SUBMITTED_BY)
# Longest pause between two tries of a poll that failed transiently.
MAX_BACKOFF_SECONDS = 60.0
# Tries at connecting for a submission (nothing is sent until a connection is made).
SUBMIT_CONNECT_TRIES = 3


@dataclass(frozen=True)
class Patience:
    """How a wait treats transient failures: this many in a row are retried, each pause doubling.

    The first pause is `first_backoff`, or the poll interval when that is None.
    """

    max_failures: int = 8
    first_backoff: float | None = None


DEFAULT_TIMEOUTS = Timeouts()
DEFAULT_PATIENCE = Patience()


def argo_cli_line(
    namespace: str, params: Mapping[str, str], *, wait: bool = False, template: str = PIPELINE_TEMPLATE
) -> str:
    """The `argo submit` command line that submits the same run, quoted for a POSIX shell."""
    words = ["argo", "submit", "--from", f"workflowtemplate/{template}", "-n", namespace]
    for name, value in params.items():
        words += ["-p", f"{name}={value}"]
    if wait:
        words.append("--wait")
    return shlex.join(words)


def submit_template(
    server: ArgoServer,
    params: Mapping[str, str],
    *,
    labels: Sequence[str] = (),
    template: str = PIPELINE_TEMPLATE,
    timeouts: Timeouts = DEFAULT_TIMEOUTS,
    deadline: Deadline | None = None,
    server_dry_run: bool = False,
) -> dict[str, Any]:
    """Submit `template` with `params`; return the created Workflow as the server sent it.

    The answer is checked before it is returned: a Workflow with a name, or for a dry run, a
    Workflow made from `template` (BadAnswer otherwise).

    With `server_dry_run` the Argo Server checks the submission against the installed template and
    answers with the Workflow it would create, creating nothing. A connection that could not be made
    is tried again (nothing was sent); an answer that did not come is not, since the workflow may
    exist already.
    """
    deadline = deadline or Deadline(None)
    options: dict[str, Any] = {
        "parameters": [f"{k}={v}" for k, v in params.items()],
        "labels": ",".join([SUBMITTED_BY_LABEL, *labels]),
    }
    if server_dry_run:
        options["serverDryRun"] = True
    body = {
        "namespace": server.namespace,
        "resourceKind": "WorkflowTemplate",
        "resourceName": template,
        "submitOptions": options,
    }
    path = f"api/v1/workflows/{server.namespace}/submit"
    attempt = 0
    while True:
        try:
            created = request_json(
                server, "POST", path, body, timeouts=timeouts, deadline=deadline, what="submit"
            )
        except Unreachable:
            attempt += 1
            if attempt == SUBMIT_CONNECT_TRIES:
                raise
            time.sleep(deadline.bound(2.0 ** (attempt - 1)))
            continue
        if server_dry_run:
            check_dry_run(created, template)
        else:
            created_name(created)
        return created


def wait_for(
    server: ArgoServer,
    name: str,
    *,
    deadline: Deadline,
    poll_seconds: float,
    timeouts: Timeouts = DEFAULT_TIMEOUTS,
    patience: Patience = DEFAULT_PATIENCE,
    on_phase: Callable[[str], None] = lambda phase: None,
    on_retry: Callable[[ArgoError, float], None] = lambda error, pause: None,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any] | None:
    """Poll the workflow until its phase is final and return it; None when the deadline comes first."""
    path = f"api/v1/workflows/{server.namespace}/{name}"
    failures, last = 0, ""
    while True:
        try:
            workflow = request_json(
                server, "GET", path, timeouts=timeouts, deadline=deadline, what=f"get {name}"
            )
        except DeadlineExceeded:
            return None
        except TransientError as error:
            failures += 1
            if failures > patience.max_failures:
                raise ArgoError(f"{error} (gave up after {failures} tries in a row)") from None
            first = patience.first_backoff if patience.first_backoff is not None else poll_seconds
            pause = min(first * 2 ** (failures - 1), MAX_BACKOFF_SECONDS)
            on_retry(error, pause)
            if not _pause(deadline, pause, sleep):
                return None
            continue
        check_workflow(workflow, f"get {name}")
        failures = 0
        phase = (workflow.get("status") or {}).get("phase") or "Pending"
        if phase != last:
            on_phase(phase)
            last = phase
        if phase in DONE_PHASES:
            return workflow
        if not _pause(deadline, poll_seconds, sleep):
            return None


def _pause(deadline: Deadline, seconds: float, sleep: Callable[[float], None]) -> bool:
    """Sleep `seconds` unless the deadline comes first; False when it does."""
    left = deadline.remaining()
    if left is not None and left < seconds:
        return False
    sleep(seconds)
    return True


def _pod_name(workflow_name: str, node_id: str, node: Mapping[str, Any]) -> str:
    # Argo 3.4+ names pods <workflow>-<template>-<hash>, the hash being the node id's suffix.
    template = node.get("templateName") or (node.get("templateRef") or {}).get("template")
    if not template:
        return node_id
    return f"{workflow_name}-{template}-{node_id.rsplit('-', 1)[-1]}"


def failure_report(workflow: Mapping[str, Any]) -> list[str]:
    """Lines that say why a workflow failed: its message, the failed step, and the logs command.

    `workflow` has passed `check_workflow`: every field read here is absent or of the right type.
    """
    metadata, status = workflow.get("metadata") or {}, workflow.get("status") or {}
    name = metadata.get("name") or "the workflow"
    namespace = metadata.get("namespace") or "default"
    lines = [f"{name} {status.get('phase') or 'Failed'}: {status.get('message') or 'no message'}"]
    failed = [
        (n.get("id") or key, n)
        for key, n in (status.get("nodes") or {}).items()
        if n.get("type") == "Pod" and n.get("phase") in ("Failed", "Error")
    ]
    if failed:
        node_id, node = max(failed, key=lambda item: item[1].get("finishedAt") or "")
        pod = _pod_name(name, node_id, node)
        lines.append(
            f"failed step: {node.get('displayName') or node_id}: {node.get('message') or node['phase']}"
        )
        lines.append(f"logs: argo logs -n {shlex.quote(namespace)} {shlex.quote(name)} {shlex.quote(pod)}")
    else:
        lines.append(f"logs: argo logs -n {shlex.quote(namespace)} {shlex.quote(name)}")
    return lines


__all__ = [
    "ArgoServer",
    "SubmitUsageError",
    "argo_cli_line",
    "failure_report",
    "submit_template",
    "wait_for",
]
