"""The `foxhunt workflows render` and `foxhunt submit` sub-commands.

Importing this module imports neither Hera nor anything heavy: `render` imports Hera when it runs,
and `submit` never does (it checks against the packaged render and talks to Argo over plain HTTP).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import yaml

from foxhunt_workflows.params import PIPELINE_TEMPLATE

EXIT_USAGE = 2


def add_workflow_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add `workflows render` and `submit` to a CLI's sub-parsers; each sets `func(args) -> int`."""
    workflows = subparsers.add_parser("workflows", help="Argo WorkflowTemplates of the training pipeline")
    workflows_sub = workflows.add_subparsers(dest="workflows_command", metavar="COMMAND", required=True)
    render = workflows_sub.add_parser(
        "render", help="write the WorkflowTemplate YAML that the Helm chart ships"
    )
    render.add_argument("--out", required=True, type=Path, help="directory for one YAML file per template")
    render.add_argument(
        "--gpu-pool-label",
        default=None,
        help="node label key the GPU pods' pool selects on (default: foxhunt.io/gpu-pool)",
    )
    render.set_defaults(func=run_render)
    _add_submit(subparsers)


def _add_submit(subparsers: argparse._SubParsersAction) -> None:
    submit = subparsers.add_parser(
        "submit",
        help=f"submit {PIPELINE_TEMPLATE} to an Argo Server (like argo submit --from workflowtemplate/...)",
        description="Server and credentials come from ARGO_SERVER, ARGO_TOKEN, ARGO_NAMESPACE, ARGO_SECURE "
        "and ARGO_INSECURE_SKIP_VERIFY, as for the argo CLI. Parameters are checked against the template "
        "before anything is sent.",
    )
    add = submit.add_argument
    add("--model", default=None, help="the model parameter (default: the template's)")
    add("--epochs", type=int, default=None, help="epochs per fold (default: the template's)")
    add(
        "--trials",
        type=int,
        default=None,
        help="hyperparameter trials; > 0 needs -p study-storage-secret=NAME",
    )
    add("--gpu-pool", default=None, help="node pool of the GPU pods (default: the template's)")
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
    add("-l", "--label", action="append", default=[], metavar="KEY=VALUE", help="workflow label; repeatable")
    add("-n", "--namespace", default=None, help="namespace (default: ARGO_NAMESPACE, else default)")
    add("-o", "--output", choices=["name", "json"], default=None,
        help="print only the workflow's name, or the created Workflow as JSON")  # fmt: skip
    add("--dry-run", action="store_true", help="print the Workflow that would be submitted; send nothing")
    add("--wait", action="store_true", help="wait for the workflow; exit non-zero unless it succeeds")
    add(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help="a hard limit, in seconds, on all the command's network waits",
    )
    add("--poll", type=float, default=10.0, metavar="S", help="seconds between status checks (default: 10)")
    add("--connect-timeout", type=float, default=10.0, metavar="S", help="per request (default: 10)")
    add("--read-timeout", type=float, default=30.0, metavar="S", help="per read of an answer (default: 30)")
    submit.set_defaults(func=run_submit)


def _usage_error(message: str) -> SystemExit:
    print(f"foxhunt submit: error: {message}", file=sys.stderr)
    return SystemExit(EXIT_USAGE)


def run_render(args: argparse.Namespace) -> int:
    """Write the rendered templates into `args.out` and list them."""
    from foxhunt_workflows.render import render_all
    from foxhunt_workflows.templates import RenderOptions

    options = (
        RenderOptions() if args.gpu_pool_label is None else RenderOptions(gpu_pool_label=args.gpu_pool_label)
    )
    for path in render_all(args.out, options):
        print(path)
    return 0


def _check_flags(args: argparse.Namespace) -> None:
    if args.epochs is not None and args.epochs < 1:
        raise _usage_error(f"--epochs must be at least 1, got {args.epochs}")
    if args.trials is not None and args.trials < 0:
        raise _usage_error(f"--trials must be 0 or more, got {args.trials}")
    for flag in ("timeout", "poll", "connect_timeout", "read_timeout"):
        value = getattr(args, flag)
        if value is not None and not value > 0:
            raise _usage_error(f"--{flag.replace('_', '-')} must be positive, got {value}")
    if any("=" not in label for label in args.label):
        raise _usage_error("--label expects KEY=VALUE")


def submission_params(args: argparse.Namespace) -> dict[str, str]:
    """The parameters to send: the file's, then the flags', then -p, each winning over the one before."""
    from foxhunt_workflows.arguments import parameter_file, parse_pairs

    params = parameter_file(args.parameter_file) if args.parameter_file else {}
    flags = {"model": args.model, "epochs": args.epochs, "trials": args.trials, "gpu-pool": args.gpu_pool}
    params |= {name: str(value) for name, value in flags.items() if value is not None}
    return params | parse_pairs(args.param)


def run_submit(args: argparse.Namespace) -> int:
    """Check, then submit the pipeline (or print it with --dry-run), and optionally wait for it."""
    from foxhunt_workflows.argo_api import ArgoError, ArgoServer, Deadline, Timeouts
    from foxhunt_workflows.arguments import SubmitUsageError, TemplateParameters, check_parameters
    from foxhunt_workflows.render import shipped_template
    from foxhunt_workflows.submit import argo_cli_line, submit_template

    _check_flags(args)
    try:
        params = submission_params(args)
        check_parameters(params, TemplateParameters.from_document(shipped_template(PIPELINE_TEMPLATE)))
        if args.dry_run:
            return _print_dry_run(args, params)
        server = ArgoServer.from_env(os.environ, namespace=args.namespace)
    except SubmitUsageError as error:
        raise _usage_error(str(error)) from None

    # From here on every step can wait on the network: all of it stays inside --timeout.
    deadline = Deadline.after(args.timeout)
    timeouts = Timeouts(connect=args.connect_timeout, read=args.read_timeout)
    try:
        created = submit_template(server, params, labels=args.label, timeouts=timeouts, deadline=deadline)
    except ArgoError as error:
        print(f"foxhunt submit: failed: {error}", file=sys.stderr)
        return 1
    name = created.get("metadata", {}).get("name", "")
    if args.output == "json":
        print(json.dumps(created, indent=2, sort_keys=True))
    else:
        print(name)
    if args.output is None:
        print(argo_cli_line(server.namespace, params, wait=args.wait))
    return _follow(args, server, name, timeouts, deadline) if args.wait else 0


def _print_dry_run(args: argparse.Namespace, params: dict[str, str]) -> int:
    from foxhunt_workflows.arguments import workflow_manifest

    namespace = args.namespace or os.environ.get("ARGO_NAMESPACE") or "default"
    manifest = workflow_manifest(PIPELINE_TEMPLATE, namespace, params, args.label)
    if args.output == "json":
        print(json.dumps(manifest, indent=2))
    else:
        print(yaml.safe_dump(manifest, sort_keys=False), end="")
    return 0


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
        print(f"foxhunt submit: watching {name} failed: {error}", file=sys.stderr)
        return 1
    if workflow is None:
        print(f"foxhunt submit: {name} still running after {args.timeout:g} s (--timeout)", file=sys.stderr)
        return 1
    if workflow["status"]["phase"] != "Succeeded":
        for line in failure_report(workflow):
            print(f"foxhunt submit: {line}", file=sys.stderr)
        return 1
    for output in workflow.get("status", {}).get("outputs", {}).get("parameters", []):
        print(f"{name}: {output['name']} = {output.get('value', '')}", file=sys.stderr)
    return 0
