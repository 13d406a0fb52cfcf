"""Fake credentials planted where foxhunt reads credentials, and a check that none of them leaked.

Each value carries one marker, so a leak is found in any casing or inside a longer string.
"""

from __future__ import annotations

import pytest

MARKER = "8c1f0e"
PLANTED = {
    "AWS_ACCESS_KEY_ID": f"FAKEKEYID{MARKER.upper()}",
    "AWS_SECRET_ACCESS_KEY": f"fake-secret-{MARKER}",
    "ARGO_TOKEN": f"fake-token-{MARKER}",
    "FOXHUNT_STUDY_STORAGE": f"postgresql://foxhunt:fake-pass-{MARKER}-study@db:5432/optuna",
    "FOXHUNT_PUSHGATEWAY": f"https://push:fake-pass-{MARKER}-push@pushgateway:9091",
}


def leaked(text: str) -> list[str]:
    """The names of the planted credentials whose value appears in `text`, in PLANTED's order."""
    lowered = text.lower()
    return [name for name, value in PLANTED.items() if value.lower() in lowered]


@pytest.fixture
def planted_secrets(monkeypatch) -> dict[str, str]:
    """Every credential foxhunt reads from the environment, set to a fake value."""
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    return PLANTED
