"""The namespace of the current kube context, read from the kubeconfig as kubectl reads it (no kubectl).

`KUBECONFIG` is a list of files (":"-separated on POSIX); kubectl merges them so that the first file
to set a value wins: the first non-empty `current-context`, and the first definition of each context.
Without `KUBECONFIG` the file is `~/.kube/config`. A missing file is skipped, as kubectl skips it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

DEFAULT_NAMESPACE = "default"


class KubeconfigError(ValueError):
    """A kubeconfig file that exists but cannot be read as one."""


def kubeconfig_files(env: Mapping[str, str], home: Path) -> list[Path]:
    """The files kubectl would read: `KUBECONFIG`'s entries in order, else `~/.kube/config`."""
    listed = [Path(p) for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    return listed or [home / ".kube" / "config"]


def _load(path: Path) -> dict[str, Any]:
    try:
        if not path.is_file():
            return {}
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise KubeconfigError(f"kubeconfig {path}: cannot be read ({type(error).__name__})") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise KubeconfigError(f"kubeconfig {path}: not a kubeconfig (a YAML mapping)")
    return document


def _contexts(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    contexts = {}
    for entry in config.get("contexts") or []:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            contexts[entry["name"]] = entry.get("context") or {}
    return contexts


def context_namespace(env: Mapping[str, str], home: Path | None = None) -> tuple[str, str]:
    """The current kube context's namespace and where it came from; ("default", ...) when none is set."""
    current = ""
    contexts: dict[str, dict[str, Any]] = {}
    for path in kubeconfig_files(env, home if home is not None else Path.home()):
        config = _load(path)
        current = current or str(config.get("current-context") or "")
        for name, context in _contexts(config).items():
            contexts.setdefault(name, context)
    namespace = contexts.get(current, {}).get("namespace") if current else None
    if isinstance(namespace, str) and namespace:
        return namespace, f"kube context {current!r} namespace"
    return DEFAULT_NAMESPACE, "the default namespace"
