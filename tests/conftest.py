# The CLI's numeric mode (MKL_CBWR, foxhunt/config/numerics.py) before anything here loads torch: MKL reads
# it once, at its first call, and the in-process runs, the fork server and every subprocess inherit it.
from foxhunt.config.numerics import pin_cpu_numerics

pin_cpu_numerics()

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

# A tiny fxcache and hyperparameters for `foxhunt train` runs, and a quick and a one-fold run of them (each
# once a session), as fixtures any test module can request.
from support.run_cases import one_fold_run, quick_run, tiny_fxcache, tiny_params  # noqa

# `foxhunt` commands as processes of their own, forked from one that has imported torch (its fixture stops it).
from support.forked_runs import fork_server  # noqa

# Fresh-process runs queued in the background once the tests are collected, on the core the rest leaves idle.
from support.background_runs import background_runs, pytest_collection_modifyitems  # noqa

# The README's `foxhunt pipeline` and the reference studies, run once a session (in the background) for
# the tests that read them.
from support.reference_figures import default_pipeline, reference_studies  # noqa

# In-process training on one torch thread. The suite's tensors are tiny, and on a 2-core machine shared
# with the services and the subprocess runs a second intra-op thread mostly waits for a core: one DQN
# test took 76 s of CPU on two threads and 3 s on one. Subprocess runs keep torch's own default.
import torch  # noqa: E402

torch.set_num_threads(1)
