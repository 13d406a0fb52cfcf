"""The Kubernetes Secrets the foxhunt pods read: each one's default name, its keys and what reads them.

One definition serves the Hera templates (`pods.py`, `templates.py`), `submit`'s messages and the
READMEs' `kubectl create secret` lines (a test renders the chart and holds the READMEs to the keys
the pods read). Imports nothing: `submit` and the light client use it too.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SecretKey:
    """One key of a Secret and the environment variable the pod reads it into."""

    key: str
    env: str
    optional: bool = False


@dataclass(frozen=True)
class ClusterSecret:
    """A Secret the user creates (the chart never does), by its default name."""

    name: str
    keys: tuple[SecretKey, ...]

    def key(self, env: str) -> SecretKey:
        """The key read into `env`; KeyError when this Secret feeds no such variable."""
        for candidate in self.keys:
            if candidate.env == env:
                return candidate
        raise KeyError(f"{self.name} feeds no variable {env!r}")


# S3 endpoint and credentials; boto3 reads the variables itself. The chart's s3.existingSecret renames it.
S3_SECRET = ClusterSecret(
    "foxhunt-s3",
    (
        SecretKey("AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID"),
        SecretKey("AWS_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY"),
        SecretKey("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL", optional=True),
        SecretKey("AWS_REGION", "AWS_REGION", optional=True),
    ),
)
# The key that signs compiled training steps (a Secret the data bucket's writers cannot read).
# Optional: without it a pod keeps no compile cache and compiles afresh.
COMPILE_CACHE_SECRET = ClusterSecret(
    "foxhunt-compile-cache", (SecretKey("key", "FOXHUNT_COMPILE_CACHE_KEY", optional=True),)
)
# The Optuna study's PostgreSQL URL (SQLAlchemy form). Its name is the `study-storage-secret`
# parameter; this name is the one the READMEs use.
STUDY_SECRET = ClusterSecret("foxhunt-study", (SecretKey("url", "FOXHUNT_STUDY_STORAGE"),))

CLUSTER_SECRETS = (S3_SECRET, COMPILE_CACHE_SECRET, STUDY_SECRET)
