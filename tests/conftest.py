# Fails the session if any test opens a file outside the repository (tests/support/outside_reads.py).
from support.outside_reads import outside_reads, pytest_runtest_setup, pytest_sessionfinish  # noqa

# S3 servers (SeaweedFS, moto) on loopback, as fixtures any test module can request.
from support.s3_server import *  # noqa

# Prometheus and Pushgateway on loopback, as fixtures any test module can request.
from support.prom_services import *  # noqa

# DCGM and Argo controller series for a real run's pods, as those exporters name them.
from support.exporter_series import exporter_series  # noqa

# PostgreSQL on loopback, as fixtures any test module can request.
from support.pg_service import *  # noqa

# A tiny fxcache and hyperparameters for `foxhunt train` runs, as fixtures any test module can request.
from support.run_cases import tiny_fxcache, tiny_params  # noqa

# The README's `foxhunt pipeline`, run once a session for the tests that read it.
from support.reference_figures import default_pipeline  # noqa
