"""The `foxhunt workflows render` and `foxhunt submit` sub-commands.

Importing this module imports neither Hera nor anything heavy: `render` imports Hera when it runs
(the `render` extra), and `submit` never does (it checks against the packaged render's schema and
talks to Argo over plain HTTP).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import textwrap
from pathlib import Path

import yaml

from foxhunt.extras import needs_note
from foxhunt_workflows.params import PIPELINE_TEMPLATE, TEMPLATES, parameter, parameters_help

EXIT_USAGE = 2


def add_workflow_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add `workflows render` and `submit` to a CLI's sub-parsers; each sets `func(args) -> int`."""
    workflows = subparsers.add_parser("workflows", help="Argo WorkflowTemplates of the training pipeline")
    workflows_sub = workflows.add_subparsers(dest="workflows_command", metavar="COMMAND", required=True)
    render = workflows_sub.add_parser(
        "render",
        help=f"write the WorkflowTemplate YAML that the Helm chart ships {needs_note('render')}",
        description=needs_note("render"),
    )
    render.add_argument("--out", required=True, type=Path, help="directory for one YAML file per template")
    render.add_argument(
        "--gpu-pool-label",
        default=None,
        help="node label key the GPU pods' pool selects on (default: foxhunt.io/gpu-pool)",
    )
    render.set_defaults(func=run_render)
    _add_submit(subparsers)


# The submit command's shortcuts for the parameters every run sets; their help is the schema's.
SHORTCUTS = ("model", "epochs", "trials", "gpu-pool")
OUTPUTS = ("name", "json", "yaml")


def _add_submit(subparsers: argparse._SubParsersAction) -> None:
    submit = subparsers.add_parser(
        "submit",
        help="submit a WorkflowTemplate to an Argo Server (like argo submit --from workflowtemplate/...)",
        description=textwrap.fill(
            "Server and credentials come from ARGO_SERVER, ARGO_TOKEN, ARGO_NAMESPACE, ARGO_SECURE "
            "and ARGO_INSECURE_SKIP_VERIFY, as for the argo CLI; without ARGO_NAMESPACE (or -n) the namespace "
            "is the current kube context's (KUBECONFIG, else ~/.kube/config), else default. Every parameter "
            "is checked against the template's schema (the trainer's own bounds and choices, from "
            "foxhunt.config) before anything is sent. bars-uri, fxcache-uri and output-uri have no default: "
            "name them with -p.",
            width=100,
        ),
        epilog=parameters_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = submit.add_argument
    add("--from", dest="template", default=PIPELINE_TEMPLATE, metavar="TEMPLATE",
        help=f"the WorkflowTemplate, as NAME or workflowtemplate/NAME (argo's form): {', '.join(TEMPLATES)} "
        f"(default: {PIPELINE_TEMPLATE})")  # fmt: skip
    for name in SHORTCUTS:
        p = parameter(name)
        add(f"--{name}", default=None, metavar=name.upper().replace("-", "_"),
            help=f"the {name} parameter: {p.help} Default: the template's ({p.default}).".replace("%", "%%"))  # fmt: skip
    add(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a template parameter; repeatable",
    )
    add("-f", "--parameter-file", type=Path, default=None, metavar="FILE",
        help="parameters from a YAML or JSON mapping (-p and the flags above win)")  # fmt: skip
    add("-l", "--label", action="append", default=[], metavar="KEY=VALUE",
        help="workflow label, checked as Kubernetes checks labels; repeatable")  # fmt: skip
    add("-n", "--namespace", default=None,
        help="namespace (default: ARGO_NAMESPACE, else the current kube context's, else default)")  # fmt: skip
    add("-o", "--output", choices=OUTPUTS, default=None,
        help="name: only the workflow's name; json or yaml: the Workflow (with --wait, the finished one). "
        "Without -o, --wait prints the finished workflow's phase and outputs as JSON on stdout")  # fmt: skip
    add("--dry-run", action="store_true", help="print the Workflow that would be submitted; send nothing")
    add("--server-dry-run", action="store_true",
        help="send the submission with the Argo Server's server-side dry run: the server checks it "
        "against the installed template and creates nothing (where the server supports it)")  # fmt: skip
    add("--wait", action="store_true", help="wait for the workflow; exit non-zero unless it succeeds")
    add(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help="a hard limit, in seconds, on all the command's network waits (at most 604800: 7 days)",
    )
    add("--poll", type=float, default=10.0, metavar="S",
        help="seconds between status checks (default: 10, at most 3600)")  # fmt: skip
    add("--connect-timeout", type=float, default=10.0, metavar="S",
        help="per connection (default: 10, at most 600)")  # fmt: skip
    add("--read-timeout", type=float, default=30.0, metavar="S",
        help="for each request's whole answer, however it trickles in (default: 30, at most 600)")  # fmt: skip
    submit.set_defaults(func=run_submit)


def _usage_error(message: str) -> SystemExit:
    print(f"foxhunt submit: error: {message}", file=sys.stderr)
    return SystemExit(EXIT_USAGE)


def run_render(args: argparse.Namespace) -> int:
    """Write the rendered templates into `args.out` and list them (exit 2 without the render extra)."""
    from foxhunt.errors import UsageError
    from foxhunt.extras import require_extra

    try:
        require_extra("render", "foxhunt workflows render")
    except UsageError as error:
        print(f"foxhunt workflows render: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    from foxhunt_workflows.render import render_all
    from foxhunt_workflows.templates import RenderOptions

    options = (
        RenderOptions() if args.gpu_pool_label is None else RenderOptions(gpu_pool_label=args.gpu_pool_label)
    )
    for path in render_all(args.out, options):
        print(path)
    return 0


# A Kubernetes namespace name (a DNS label): it goes into the request's path.
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


# The longest each time flag may be, in seconds: past these a wait is a typo (and a socket or timer
# given 1e308 s overflows). --timeout covers a whole --wait for a long study.
MOST_SECONDS = {"timeout": 7 * 86400.0, "poll": 3600.0, "connect_timeout": 600.0, "read_timeout": 600.0}

# `argo submit --from KIND/NAME`: the kinds that name a WorkflowTemplate (argo accepts the short form).
_TEMPLATE_KINDS = ("workflowtemplate", "wftmpl")


def template_name(value: str) -> str:
    """The template `--from` names: `NAME` or `workflowtemplate/NAME`; any other kind or name is refused."""
    kind, slash, name = value.rpartition("/")
    if slash and kind.lower() not in _TEMPLATE_KINDS:
        raise _usage_error(
            f"--from {value}: foxhunt submits WorkflowTemplates only (workflowtemplate/NAME or NAME), "
            f"not a {kind}"
        )
    if name not in TEMPLATES:
        raise _usage_error(f"--from {value}: no template {name!r}; one of {', '.join(TEMPLATES)}")
    return name


def submission_namespace(args: argparse.Namespace) -> tuple[str, str]:
    """The namespace to submit to and where it came from: -n, ARGO_NAMESPACE, the kube context, default."""
    from foxhunt_workflows.kubeconfig import KubeconfigError, context_namespace

    if args.namespace is not None:
        return args.namespace, "-n"
    if os.environ.get("ARGO_NAMESPACE"):
        return os.environ["ARGO_NAMESPACE"], "ARGO_NAMESPACE"
    try:
        return context_namespace(os.environ)
    except KubeconfigError as error:
        raise _usage_error(f"{error}; set ARGO_NAMESPACE or pass -n") from None


def _check_flags(args: argparse.Namespace) -> None:
    for flag, most in MOST_SECONDS.items():
        value = getattr(args, flag)
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise _usage_error(
                f"--{flag.replace('_', '-')} must be a positive number of seconds, got {value}"
            )
        if value is not None and value > most:
            raise _usage_error(f"--{flag.replace('_', '-')} must be at most {most:g} s, got {value:g}")
    args.template = template_name(args.template)
    namespace, source = submission_namespace(args)
    if not _NAMESPACE.fullmatch(namespace):
        raise _usage_error(
            f"{source} {namespace!r}: a namespace is at most 63 lower-case letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    args.namespace = namespace
    if args.dry_run and args.server_dry_run:
        raise _usage_error("--dry-run and --server-dry-run: choose one")
    if args.wait and (args.dry_run or args.server_dry_run):
        raise _usage_error("--wait: a dry run creates no workflow to wait for")
    if args.dry_run and args.output == "name":
        raise _usage_error("-o name: a --dry-run creates no workflow, so it has no name")


def submission_params(args: argparse.Namespace):
    """The parameters to send: the file's, then the flags', then -p, each winning over the one before."""
    from foxhunt_workflows.arguments import Submission, parameter_file, parse_pairs

    submission = Submission()
    if args.parameter_file:
        submission.add(parameter_file(args.parameter_file), str(args.parameter_file))
    for name in SHORTCUTS:
        value = getattr(args, name.replace("-", "_"))
        if value is not None:
            submission.add({name: str(value)}, f"--{name}")
    submission.add(parse_pairs(args.param), "-p")
    return submission


def run_submit(args: argparse.Namespace) -> int:
    """Check, then submit the template (or print it with --dry-run), and optionally wait for it."""
    from foxhunt_workflows.argo_api import ArgoError, ArgoServer, Deadline, Timeouts
    from foxhunt_workflows.arguments import (
        SubmitUsageError,
        TemplateParameters,
        check_labels,
        check_parameters,
    )
    from foxhunt_workflows.render import shipped_template
    from foxhunt_workflows.submit import argo_cli_line, submit_template

    _check_flags(args)
    try:
        check_labels(args.label)
        submission = submission_params(args)
        check_parameters(submission, TemplateParameters.from_document(shipped_template(args.template)))
        params = submission.params
        if args.dry_run:
            return _print_dry_run(args, params)
        server = ArgoServer.from_env(os.environ, namespace=args.namespace)
    except SubmitUsageError as error:
        raise _usage_error(str(error)) from None

    # From here on every step can wait on the network: all of it stays inside --timeout.
    deadline = Deadline.after(args.timeout)
    timeouts = Timeouts(connect=args.connect_timeout, read=args.read_timeout)
    try:
        created = submit_template(
            server, params, labels=args.label, template=args.template, timeouts=timeouts, deadline=deadline,
            server_dry_run=args.server_dry_run,
        )  # fmt: skip
    except ArgoError as error:
        hint = " (with --server-dry-run: the server may not support server-side dry runs)"
        shown = server.shown(str(error))
        print(f"foxhunt submit: failed: {shown}{hint if args.server_dry_run else ''}", file=sys.stderr)
        return 1
    name = created.get("metadata", {}).get("name", "")  # checked by submit_template
    if args.server_dry_run:
        _print_workflow(created, args.output or "yaml", server.shown)
        return 0
    line = argo_cli_line(server.namespace, params, wait=args.wait, template=args.template)
    if args.output == "name":
        print(name, flush=True)
    elif args.output is None:
        # With --wait, stdout is kept for the finished workflow's outputs (JSON).
        stream = sys.stderr if args.wait else sys.stdout
        print(name, file=stream, flush=True)
        print(line, file=stream, flush=True)
    elif not args.wait:
        _print_workflow(created, args.output, server.shown)
    return _follow(args, server, name, timeouts, deadline) if args.wait else 0


def _print_workflow(workflow: dict, output: str, shown=lambda text: text) -> None:
    # `shown` masks the submitter's token wherever a server echoed it into the Workflow.
    if output == "name":
        print(workflow.get("metadata", {}).get("name", ""))
    elif output == "json":
        print(shown(json.dumps(workflow, indent=2, sort_keys=True)))
    else:
        print(shown(yaml.safe_dump(workflow, sort_keys=False)), end="")


def _print_dry_run(args: argparse.Namespace, params: dict[str, str]) -> int:
    from foxhunt_workflows.arguments import workflow_manifest

    _print_workflow(
        workflow_manifest(args.template, args.namespace, params, args.label), args.output or "yaml"
    )
    return 0


def finished_outputs(workflow: dict) -> dict:
    """What `--wait` prints: the workflow's name, namespace, final phase and output parameters."""
    metadata, status = workflow.get("metadata") or {}, workflow.get("status") or {}
    parameters = (status.get("outputs") or {}).get("parameters") or []
    return {
        "name": metadata.get("name") or "",
        "namespace": metadata.get("namespace") or "",
        "phase": status.get("phase") or "",
        "outputs": {p["name"]: p.get("value", "") for p in parameters},
    }


def _follow(args: argparse.Namespace, server, name: str, timeouts, deadline) -> int:
    from foxhunt_workflows.argo_api import ArgoError
    from foxhunt_workflows.submit import failure_report, wait_for

    def retrying(error: ArgoError, pause: float) -> None:
        print(f"foxhunt submit: {error}; trying again in {pause:g} s", file=sys.stderr)

    try:
        workflow = wait_for(
            server, name, deadline=deadline, poll_seconds=args.poll, timeouts=timeouts,
            on_phase=lambda phase: print(f"{name}: {phase}", file=sys.stderr), on_retry=retrying,
        )  # fmt: skip
    except ArgoError as error:
        print(f"foxhunt submit: watching {name} failed: {server.shown(str(error))}", file=sys.stderr)
        return 1
    if workflow is None:
        print(f"foxhunt submit: {name} still running after {args.timeout:g} s (--timeout)", file=sys.stderr)
        return 1
    if args.output in ("json", "yaml"):
        _print_workflow(workflow, args.output, server.shown)
    elif args.output is None:
        print(server.shown(json.dumps(finished_outputs(workflow), indent=2, sort_keys=True)))
    if (workflow.get("status") or {}).get("phase") != "Succeeded":
        for line in failure_report(workflow):
            print(f"foxhunt submit: {server.shown(line)}", file=sys.stderr)
        return 1
    return 0
