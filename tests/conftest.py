# S3 servers (SeaweedFS, moto) on loopback, as fixtures any test module can request.
from support.s3_server import *  # noqa

# Prometheus and Pushgateway on loopback, as fixtures any test module can request.
from support.prom_services import *  # noqa

# PostgreSQL on loopback, as fixtures any test module can request.
from support.pg_service import *  # noqa

# A tiny fxcache and hyperparameters for `foxhunt train` runs, as fixtures any test module can request.
from support.run_cases import tiny_fxcache, tiny_params  # noqa
