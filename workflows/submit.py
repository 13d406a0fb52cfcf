"""Submit `train-pipeline` through the Argo Server API, configured like the argo CLI."""

from __future__ import annotations

import shlex
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from foxhunt_workflows.params import PIPELINE_TEMPLATE

DONE_PHASES = ("Succeeded", "Failed", "Error")
SUBMITTED_BY_LABEL = "foxhunt.io/submitted-by=foxhunt-cli"


class SubmitUsageError(ValueError):
    """Bad configuration or arguments: the CLI reports it in one line and exits 2."""


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
            raise SubmitUsageError(f"ARGO_SERVER is host:port without a scheme (set ARGO_SECURE instead): {server}")
        scheme = "https" if _env_flag(env, "ARGO_SECURE", default=True) else "http"
        base_href = env.get("ARGO_BASE_HREF", "").strip("/")
        url = f"{scheme}://{server}/" + (f"{base_href}/" if base_href else "")
        return cls(
            url=url,
            namespace=namespace or env.get("ARGO_NAMESPACE") or "default",
            token=_bearer(env.get("ARGO_TOKEN", "")),
            verify_ssl=not _env_flag(env, "ARGO_INSECURE_SKIP_VERIFY", default=False),
        )


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


def parse_params(pairs: Sequence[str], allowed: Sequence[str]) -> dict[str, str]:
    """Turn `k=v` strings into a dict, refusing malformed pairs and names the pipeline does not declare."""
    params: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SubmitUsageError(f"--param expects NAME=VALUE, got {pair!r}")
        if name not in allowed:
            raise SubmitUsageError(f"unknown parameter {name!r}; {PIPELINE_TEMPLATE} takes: {', '.join(allowed)}")
        params[name] = value
    return params


def argo_cli_line(namespace: str, params: Mapping[str, str], *, wait: bool = False) -> str:
    """The `argo submit` command line that submits the same run, quoted for a POSIX shell."""
    words = ["argo", "submit", "--from", f"workflowtemplate/{PIPELINE_TEMPLATE}", "-n", namespace]
    for name, value in params.items():
        words += ["-p", f"{name}={value}"]
    if wait:
        words.append("--wait")
    return shlex.join(words)


def _service(server: ArgoServer):
    from hera.workflows import WorkflowsService

    return WorkflowsService(
        host=server.url, token=server.token, namespace=server.namespace, verify_ssl=server.verify_ssl
    )


def submit_pipeline(server: ArgoServer, params: Mapping[str, str], labels: Sequence[str] = ()) -> str:
    """Submit `train-pipeline` with `params`; return the new workflow's name."""
    from hera.workflows import models as m

    request = m.WorkflowSubmitRequest(
        namespace=server.namespace,
        resource_kind="WorkflowTemplate",
        resource_name=PIPELINE_TEMPLATE,
        submit_options=m.SubmitOpts(
            parameters=[f"{k}={v}" for k, v in params.items()],
            labels=",".join([SUBMITTED_BY_LABEL, *labels]),
        ),
    )
    with _service(server) as service, warnings.catch_warnings():
        # Hera 7.1 serialises the request with pydantic's deprecated `.json()`; the warning is Hera's, not ours.
        warnings.simplefilter("ignore", DeprecationWarning)
        workflow = service.submit_workflow(request, namespace=server.namespace)
    return workflow.metadata.name


def wait_for(
    server: ArgoServer,
    name: str,
    *,
    timeout: float | None,
    poll_seconds: float,
    on_phase: Callable[[str], None] = lambda phase: None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> str | None:
    """Poll the workflow until its phase is final; return it, or None when `timeout` runs out first."""
    deadline = None if timeout is None else clock() + timeout
    last = ""
    with _service(server) as service:
        while True:
            workflow = service.get_workflow(name, namespace=server.namespace)
            phase = (workflow.status.phase if workflow.status else None) or "Pending"
            if phase != last:
                on_phase(phase)
                last = phase
            if phase in DONE_PHASES:
                return phase
            if deadline is not None and clock() + poll_seconds > deadline:
                return None
            sleep(poll_seconds)
