"""The Secrets a rendered chart's pods read, and the Secrets a document tells its reader to create."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from foxhunt_workflows.checks import pod_templates

# A Secret named by a template input (`{{inputs.parameters.NAME}}`): its name is given at submission.
_PARAMETER = re.compile(r"^\{\{inputs\.parameters\.([a-z0-9-]+)\}\}$")
_CREATE = re.compile(r"create\s+secret\s+generic\s+([a-z0-9][a-z0-9.-]*)")
# One `--from-literal=KEY=VALUE` after the name; a value may be quoted and hold spaces, and the
# command may go on after a shell line continuation.
_LITERAL = re.compile(r"""\s+(?:\\\n\s*)?--from-literal=([A-Za-z0-9_.-]+)=('[^']*'|"[^"]*"|[^\s`]*)""")


@dataclass
class SecretRead:
    """What the pods read from one Secret: its keys (required and optional), or every key (None)."""

    required: set[str] = field(default_factory=set)
    optional: set[str] = field(default_factory=set)
    whole: bool = False  # envFrom or a volume without items: every key the Secret holds

    @property
    def keys(self) -> set[str]:
        """Every key named by a reference."""
        return self.required | self.optional


def _add(reads: dict[str, SecretRead], name: str, key: str | None, optional: bool) -> None:
    read = reads.setdefault(name, SecretRead())
    if key is None:
        read.whole = True
    elif optional:
        read.optional.add(key)
    else:
        read.required.add(key)


def secrets_read(workflow_templates: Iterable[dict]) -> dict[str, SecretRead]:
    """Every Secret the pods of `workflow_templates` read, by name (a parameter's name as written)."""
    reads: dict[str, SecretRead] = {}
    for document in workflow_templates:
        for template in pod_templates(document):
            container = template.get("container") or template.get("script") or {}
            for env in container.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    _add(reads, ref["name"], ref["key"], bool(ref.get("optional")))
            for source in container.get("envFrom", []):
                if "secretRef" in source:
                    _add(reads, source["secretRef"]["name"], None, bool(source["secretRef"].get("optional")))
            for volume in template.get("volumes", []):
                secret = volume.get("secret")
                for item in (secret or {}).get("items", []) or ([None] if secret else []):
                    key = None if item is None else item["key"]
                    _add(reads, secret["secretName"], key, bool(secret.get("optional")))
    return reads


def resolved_name(name: str, text: str) -> set[str]:
    """The Secret names `name` stands for in `text`: itself, or for a parameter each `PARAM=NAME` given."""
    match = _PARAMETER.match(name)
    if not match:
        return {name}
    return set(re.findall(rf"\b{re.escape(match.group(1))}=([a-z0-9][a-z0-9.-]*)", text))


def secrets_created(text: str) -> dict[str, set[str]]:
    """Each `kubectl create secret generic NAME --from-literal=KEY=...` in `text`: NAME → its KEYs."""
    created: dict[str, set[str]] = {}
    for match in _CREATE.finditer(text):
        keys, position = created.setdefault(match.group(1), set()), match.end()
        while literal := _LITERAL.match(text, position):
            keys.add(literal.group(1))
            position = literal.end()
    return created


def creation_problems(text: str, reads: dict[str, SecretRead], *, every_secret: bool) -> list[str]:
    """Where `text`'s `create secret` commands differ from what the pods read; [] when they agree.

    Every command must create a Secret the pods read, with only keys they read and every key they
    require; with `every_secret`, the text must also create each Secret the pods read.
    """
    created, problems = secrets_created(text), []
    names_read: dict[str, SecretRead] = {}
    for reference, read in reads.items():
        names = resolved_name(reference, text)
        if every_secret and not names & created.keys():
            problems.append(
                f"the pods read Secret {reference} (keys {sorted(read.keys)}); nothing creates it"
            )
        names_read |= dict.fromkeys(names, read)
    for name, keys in created.items():
        read = names_read.get(name)
        if read is None:
            problems.append(f"creates Secret {name}, which no pod reads")
            continue
        if not read.whole and keys - read.keys:
            problems.append(
                f"Secret {name}: keys {sorted(keys - read.keys)} are read by no pod (read: {sorted(read.keys)})"
            )
        if read.required - keys:
            problems.append(f"Secret {name}: the pods need keys {sorted(read.required - keys)}, not created")
    return problems
