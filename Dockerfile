# syntax=docker/dockerfile:1
# foxhunt trainer image: CUDA runtime base, the package with its `train` extra in a virtualenv,
# non-root, `foxhunt` entrypoint.
#
# Static scan (checkov, in the test suite): findings kept on purpose, with their reasons.
# checkov:skip=CKV_DOCKER_2: a batch trainer serves nothing to health-check; Argo follows the process and the step's deadline bounds it
# checkov:skip=CKV_DOCKER_7: the base is pinned by tag through ARG BASE_IMAGE (which the scanner cannot resolve) and by digest through BASE_DIGEST
#
# The base is pinned by tag; release builds pin it by digest too, so a re-pushed tag cannot change
# the image underneath us:
#   docker build --build-arg BASE_DIGEST=@sha256:<digest> .
# (`docker buildx imagetools inspect nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04` prints the digest.)
# Ubuntu 24.04 because its Python 3.12 satisfies numpy/scipy's >= 3.11. torch's wheel brings its own
# CUDA libraries; the base supplies the NVIDIA container runtime's driver hooks.
ARG BASE_IMAGE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04
ARG BASE_DIGEST=""

# ---- builder: compilers and build tools live here only ----------------------------------------
FROM ${BASE_IMAGE}${BASE_DIGEST} AS builder

ENV DEBIAN_FRONTEND=noninteractive \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv python3-dev build-essential \
    && rm -rf /var/lib/apt/lists/*

# Dependencies first, in their own layer, so code changes do not re-download torch.
COPY trainer_image/requirements.txt /src/trainer_image/requirements.txt
RUN python3 -m venv /opt/foxhunt \
    && /opt/foxhunt/bin/pip install -r /src/trainer_image/requirements.txt

COPY pyproject.toml README.md /src/
COPY trainer_image/foxhunt /src/trainer_image/foxhunt
COPY foxhunt_workflows /src/foxhunt_workflows
# Build the package as a wheel, then install it against the pinned set without letting pip resolve
# anything new (--no-deps): the image holds exactly requirements.txt (the base dependencies and the
# `train` extra) plus foxhunt, and `pip check` proves that set complete.
RUN /opt/foxhunt/bin/pip wheel --no-deps --wheel-dir /wheels /src \
    && /opt/foxhunt/bin/pip install --no-deps /wheels/foxhunt-*.whl \
    && /opt/foxhunt/bin/pip check

# ---- runtime: interpreter and the virtualenv, no compilers -------------------------------------
FROM ${BASE_IMAGE}${BASE_DIGEST} AS runtime

ENV DEBIAN_FRONTEND=noninteractive
# tzdata: the IANA time zones the execution model reads (`--eval-session-zone`, the 17:00 New York rollover).
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 foxhunt \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin foxhunt \
    && mkdir -p /cache \
    && chown 10001:10001 /cache

COPY --from=builder /opt/foxhunt /opt/foxhunt

# The commit the image was built from (`--build-arg FOXHUNT_COMMIT=$(git rev-parse HEAD)`): the MLflow run
# records it, since an image holds no git checkout to ask.
ARG FOXHUNT_COMMIT=""

# The pods mount emptyDirs on /tmp and /cache and keep the root filesystem read-only.
ENV PATH=/opt/foxhunt/bin:${PATH} \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    FOXHUNT_CACHE_DIR=/cache \
    MPLCONFIGDIR=/tmp/matplotlib \
    FOXHUNT_COMMIT=${FOXHUNT_COMMIT}

# Numeric, so Kubernetes can verify runAsNonRoot without resolving a user name.
USER 10001:10001
WORKDIR /tmp

ENTRYPOINT ["foxhunt"]
CMD ["--help"]
