"""The Argo stand-in fixture for every submit test in this folder."""

from support.argo_standin import argo  # noqa: F401 (a fixture)
