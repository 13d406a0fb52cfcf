"""The `foxhunt workflows render` and `foxhunt submit` sub-commands.

Nothing here imports Hera at import time: the handlers import what they need when they run,
so `foxhunt --help` works in an image without the workflows extra.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from foxhunt_workflows.params import PIPELINE_TEMPLATE, pipeline_defaults, pipeline_parameter_names


def add_workflow_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add `workflows render` and `submit` to a CLI's sub-parsers; each sets `func(args) -> int`."""
    workflows = subparsers.add_parser("workflows", help="Argo WorkflowTemplates of the training pipeline")
    workflows_sub = workflows.add_subparsers(dest="workflows_command", metavar="COMMAND", required=True)
    render = workflows_sub.add_parser("render", help="write the WorkflowTemplate YAML that the Helm chart ships")
    render.add_argument("--out", required=True, type=Path, help="directory for one YAML file per template")
    render.add_argument(
        "--gpu-pool-label",
        default=None,
        help="node label key the train pod's GPU pool selects on (default: foxhunt.io/gpu-pool)",
    )
    render.set_defaults(func=run_render)

    defaults = pipeline_defaults()
    submit = subparsers.add_parser(
        "submit",
        help=f"submit {PIPELINE_TEMPLATE} to an Argo Server (like argo submit --from workflowtemplate/...)",
        description="Server and credentials come from ARGO_SERVER, ARGO_TOKEN, ARGO_NAMESPACE, ARGO_SECURE "
        "and ARGO_INSECURE_SKIP_VERIFY, as for the argo CLI.",
    )
    submit.add_argument("--model", default=defaults["model"], choices=["dqn"])
    submit.add_argument("--epochs", type=int, default=int(defaults["epochs"]))
    submit.add_argument("--trials", type=int, default=int(defaults["trials"]))
    submit.add_argument("--gpu-pool", default=None, help="node pool of the GPU pod (default: the template's)")
    submit.add_argument(
        "-p", "--param", action="append", default=[], metavar="NAME=VALUE",
        help=f"any other {PIPELINE_TEMPLATE} parameter; repeatable",
    )  # fmt: skip
    submit.add_argument("-l", "--label", action="append", default=[], metavar="KEY=VALUE", help="workflow label")
    submit.add_argument("-n", "--namespace", default=None, help="namespace (default: ARGO_NAMESPACE, else default)")
    submit.add_argument("--wait", action="store_true", help="wait for the workflow; exit non-zero unless it succeeds")
    submit.add_argument("--timeout", type=float, default=None, metavar="S", help="give up waiting after S seconds")
    submit.add_argument("--poll", type=float, default=10.0, metavar="S", help="seconds between status checks")
    submit.set_defaults(func=run_submit)


def _usage_error(message: str) -> SystemExit:
    print(f"foxhunt: error: {message}", file=sys.stderr)
    return SystemExit(2)


def run_render(args: argparse.Namespace) -> int:
    """Write the rendered templates into `args.out` and list them."""
    from foxhunt_workflows.render import render_all
    from foxhunt_workflows.templates import RenderOptions

    options = RenderOptions() if args.gpu_pool_label is None else RenderOptions(gpu_pool_label=args.gpu_pool_label)
    for path in render_all(args.out, options):
        print(path)
    return 0


def run_submit(args: argparse.Namespace) -> int:
    """Submit the pipeline, print its name and the equivalent argo line, and optionally wait for it."""
    from foxhunt_workflows import submit

    if args.epochs < 1:
        raise _usage_error(f"--epochs must be at least 1, got {args.epochs}")
    if args.trials < 0:
        raise _usage_error(f"--trials must be 0 or more, got {args.trials}")
    if args.timeout is not None and args.timeout <= 0:
        raise _usage_error(f"--timeout must be positive, got {args.timeout}")
    if args.poll <= 0:
        raise _usage_error(f"--poll must be positive, got {args.poll}")
    if any("=" not in label for label in args.label):
        raise _usage_error("--label expects KEY=VALUE")

    params = {"model": args.model, "epochs": str(args.epochs), "trials": str(args.trials)}
    if args.gpu_pool is not None:
        params["gpu-pool"] = args.gpu_pool
    try:
        params |= submit.parse_params(args.param, pipeline_parameter_names())
        server = submit.ArgoServer.from_env(os.environ, namespace=args.namespace)
    except submit.SubmitUsageError as error:
        raise _usage_error(str(error)) from None

    from hera.exceptions import HeraException

    try:
        name = submit.submit_pipeline(server, params, labels=args.label)
    except (HeraException, OSError) as error:
        print(f"foxhunt: submit to {server.url} failed: {error}", file=sys.stderr)
        return 1
    print(name)
    print(submit.argo_cli_line(server.namespace, params, wait=args.wait))
    if not args.wait:
        return 0

    try:
        phase = submit.wait_for(
            server, name, timeout=args.timeout, poll_seconds=args.poll,
            on_phase=lambda p: print(f"{name}: {p}", file=sys.stderr),
        )  # fmt: skip
    except (HeraException, OSError) as error:
        print(f"foxhunt: watching {name} failed: {error}", file=sys.stderr)
        return 1
    if phase is None:
        print(f"foxhunt: {name} still running after {args.timeout:g} s", file=sys.stderr)
        return 1
    return 0 if phase == "Succeeded" else 1
