"""The parameters of a submission, checked against the template it goes to before any request.

What a template takes (names, defaults, the schema of each value) is read from its rendered YAML:
the `spec.arguments` Argo shows, and the schema annotation that `templates.py` writes beside them
(generated from `foxhunt.config`, see `foxhunt_workflows.schema`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from foxhunt import config
from foxhunt.config import flags
from foxhunt.errors import ConfigError, UsageError
from foxhunt_workflows import instruments
from foxhunt_workflows.cluster_secrets import STUDY_SECRET
from foxhunt_workflows.params import PIPELINE_TEMPLATE, TRAIN_TEMPLATE, TRAINER_SETTINGS
from foxhunt_workflows.schema import SCHEMA_ANNOTATION, allowed, value_problem

SUBMITTED_BY = ("foxhunt.io/submitted-by", "foxhunt-cli")

# Kubernetes' rules for label keys ([prefix/]name) and values.
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class SubmitUsageError(ValueError):
    """Bad configuration or arguments: the CLI reports it in one line and exits 2."""


@dataclass(frozen=True)
class TemplateParameters:
    """What one WorkflowTemplate takes: parameter names in order, defaults, and each value's schema."""

    template: str
    names: tuple[str, ...]
    defaults: dict[str, str]
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> TemplateParameters:
        """Read them from a rendered (or installed) WorkflowTemplate."""
        parameters = document["spec"].get("arguments", {}).get("parameters", [])
        annotation = document["metadata"].get("annotations", {}).get(SCHEMA_ANNOTATION, "{}")
        return cls(
            template=document["metadata"]["name"],
            names=tuple(p["name"] for p in parameters),
            defaults={p["name"]: str(p["value"]) for p in parameters if "value" in p},
            schemas=json.loads(annotation).get("properties", {}),
        )

    @property
    def required(self) -> tuple[str, ...]:
        """The parameters without a default: a submission must give each."""
        return tuple(n for n in self.names if n not in self.defaults)


@dataclass
class Submission:
    """The parameters to send, in order, and where each one was given (for the error messages)."""

    params: dict[str, str] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)

    def add(self, params: Mapping[str, str], origin: str) -> None:
        """Add `params` from `origin` ("-p", "--epochs", a file name), each winning over an earlier value."""
        for name, value in params.items():
            self.params[name] = value
            self.origins[name] = origin

    def where(self, name: str) -> str:
        """How the user gave `name`: "-p epochs='0'", "--epochs '0'", "run.yaml: epochs='0'"."""
        origin, value = self.origins.get(name, ""), self.params[name]
        # One line stays readable: a long value is shown by its start.
        value = value if len(value) <= 80 else f"{value[:60]}... ({len(value)} characters)"
        if origin.startswith("--"):
            return f"{origin} {value!r}"
        if origin and origin != "-p":
            return f"{origin}: {name}={value!r}"
        return f"-p {name}={value!r}"


def parse_pairs(pairs: Sequence[str]) -> dict[str, str]:
    """`NAME=VALUE` strings as a dict; a pair without `=` or a name is a usage error."""
    params: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SubmitUsageError(f"--param expects NAME=VALUE, got {pair!r}")
        params[name] = value
    return params


def _as_parameter(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return "" if value is None else str(value)


def parameter_file(path: Path) -> dict[str, str]:
    """Parameters from a YAML or JSON mapping, like `argo submit --parameter-file`.

    Nested values (a `dqn-params` or `search-space` mapping) become the JSON text Argo passes on. A
    file that cannot be read as text (missing, a folder, a FIFO, binary) is a usage error.
    """
    try:
        if not path.is_file():
            problem = "no such file" if not path.exists() else "not a regular file"
            raise SubmitUsageError(f"{path}: cannot read the parameter file: {problem}")
        text = path.read_bytes().decode("utf-8")
        data = yaml.safe_load(text)
    except OSError as error:
        raise SubmitUsageError(f"{path}: cannot read the parameter file: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise SubmitUsageError(f"{path}: not a YAML or JSON text file (not UTF-8; binary?)") from None
    except RecursionError:
        raise SubmitUsageError(f"{path}: nested too deeply to be a parameter file") from None
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        line = f" (line {where.line + 1})" if where else ""
        raise SubmitUsageError(f"{path}: not valid YAML or JSON{line}") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise SubmitUsageError(f"{path}: expected a mapping of parameter names to values")
    try:
        return {name: _as_parameter(value) for name, value in data.items()}
    except (RecursionError, ValueError) as error:
        raise SubmitUsageError(f"{path}: a value cannot be passed on as JSON: {error}") from None


def check_labels(labels: Sequence[str]) -> dict[str, str]:
    """`KEY=VALUE` workflow labels as a dict, each key and value checked as Kubernetes checks them."""
    checked: dict[str, str] = {}
    for label in labels:
        key, sep, value = label.partition("=")
        if not sep:
            raise SubmitUsageError(f"--label expects KEY=VALUE, got {label!r}")
        prefix, slash, name = key.rpartition("/")
        if slash and not (len(prefix) <= 253 and _DNS_SUBDOMAIN.fullmatch(prefix)):
            raise SubmitUsageError(
                f"--label {label!r}: the key's prefix {prefix!r} must be a DNS subdomain (lower-case "
                "letters, digits, '-' and '.', at most 253)"
            )
        if not (len(name) <= 63 and _LABEL_NAME.fullmatch(name)):
            raise SubmitUsageError(
                f"--label {label!r}: the key {key!r} must be [PREFIX/]NAME, NAME at most 63 letters, "
                "digits, '-', '_' and '.', starting and ending with a letter or digit"
            )
        if value and not (len(value) <= 63 and _LABEL_NAME.fullmatch(value)):
            raise SubmitUsageError(
                f"--label {label!r}: the value {value!r} must be at most 63 letters, digits, '-', '_' "
                "and '.', starting and ending with a letter or digit (or empty)"
            )
        if key == SUBMITTED_BY[0]:
            raise SubmitUsageError(f"--label {label!r}: {key} is set by foxhunt submit itself")
        checked[key] = value
    return checked


def check_parameters(params: Mapping[str, str] | Submission, spec: TemplateParameters) -> None:
    """Refuse unknown names, a missing required parameter, and any value its schema does not allow.

    Then the trainer's own config is built from the settings given (its rules between fields, e.g. a
    window of at least one nanosecond), and trials > 0 on the pipeline needs a study storage.
    """
    submission = params if isinstance(params, Submission) else Submission(dict(params))
    for name, value in submission.params.items():
        if name not in spec.names:
            raise SubmitUsageError(
                f"unknown parameter {name!r} ({submission.where(name)}); "
                f"{spec.template} takes: {', '.join(spec.names)}"
            )
        problem = value_problem(value, spec.schemas.get(name, {"type": "string"}))
        if problem:
            raise SubmitUsageError(f"{submission.where(name)}: {problem}")
    for name in spec.required:
        if name not in submission.params:
            words = allowed(spec.schemas.get(name, {"type": "string"}))
            raise SubmitUsageError(
                f"{name} is required by {spec.template} (it has no default): pass -p {name}=... ({words})"
            )
    _check_instruments(submission, spec)
    _check_with_the_trainers_config(submission)
    _check_trials(spec.defaults | submission.params, spec)


def _check_instruments(submission: Submission, spec: TemplateParameters) -> None:
    # The bars list (pipeline), the caches list (train): every entry, before any request is made.
    params = submission.params
    lists = {"bars-uri": spec.template != TRAIN_TEMPLATE, "fxcache-uri": spec.template == TRAIN_TEMPLATE}
    try:
        for name, checked in lists.items():
            if checked and name in params and instruments.is_list(params[name]):
                instruments.check_bars(instruments.parse_uris(params[name], name), name)
        if spec.template == PIPELINE_TEMPLATE and {"bars-uri", "fxcache-uri"} <= set(params):
            instruments.plan(params["bars-uri"], params["fxcache-uri"])
    except instruments.InstrumentsError as error:
        raise SubmitUsageError(str(error)) from None
    several = [n for n, on in lists.items() if on and instruments.is_list(params.get(n, ""))]
    # A universe's search (foxhunt train --fxcache A --fxcache B --trials N) keeps its study in --out with
    # one worker; the template's trials share a PostgreSQL study over several pods, which it refuses.
    if several and int(params.get("trials", "0")) > 0:
        raise SubmitUsageError(
            f"trials={params['trials']}: a search is not supported over several instruments ({several[0]} is a "
            "list) yet; pass -p trials=0, or one instrument (a universe's search runs on one machine: "
            "foxhunt train --fxcache A --fxcache B ... --trials N)"
        )


def _typed(flag: str, value: str):
    kind = str(flags.field_at(flags.FLAGS[flag]).type).removesuffix(" | None")
    return int(value) if kind == "int" else float(value) if kind == "float" else value


def _check_with_the_trainers_config(submission: Submission) -> None:
    # After the schema: every value has its type, so the config sees what the pod's flags will give it.
    given = {f: _typed(f, submission.params[f]) for f in TRAINER_SETTINGS if f in submission.params}
    try:
        flags.run_config_from_flags(given)
    except ConfigError as error:
        flag = flags.flag_of(error)
        where = submission.where(flag) if flag in submission.params else "settings"
        raise SubmitUsageError(f"{where}: {error.problem}") from None
    if "dqn-params" in submission.params:
        dqn = json.loads(submission.params["dqn-params"])
        try:
            config.override(config.DQNConfig(), dqn, what=submission.where("dqn-params"))
        except UsageError as error:
            raise SubmitUsageError(str(error)) from None


def _check_trials(effective: Mapping[str, str], spec: TemplateParameters) -> None:
    # Only where the template fans trials out over pods on one shared study.
    if "study-storage-secret" not in spec.names or int(effective.get("trials", "0")) <= 0:
        return
    if not effective.get("study-storage-secret", "").strip():
        raise SubmitUsageError(
            f"trials={effective['trials']} needs a study storage: pass -p study-storage-secret=NAME, "
            f"a Secret whose key `{STUDY_SECRET.keys[0].key}` holds the PostgreSQL URL of the study"
        )


def workflow_manifest(
    template: str, namespace: str, params: Mapping[str, str], labels: Sequence[str]
) -> dict:
    """The Workflow that submitting `template` with `params` creates (what `--dry-run` prints)."""
    all_labels = dict([SUBMITTED_BY]) | check_labels(labels)
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"generateName": f"{template}-", "namespace": namespace, "labels": all_labels},
        "spec": {
            "workflowTemplateRef": {"name": template},
            "arguments": {"parameters": [{"name": k, "value": v} for k, v in params.items()]},
        },
    }
