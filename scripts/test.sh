#!/usr/bin/env bash
# Installs everything the tests need on a fresh machine, then runs them. The suite starts its own
# services on 127.0.0.1 (Pushgateway, Prometheus, SeaweedFS, moto, PostgreSQL) and stops them.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v prometheus >/dev/null || ! command -v prometheus-pushgateway >/dev/null \
    || ! command -v promtool >/dev/null; then
  echo "== installing Debian prometheus, prometheus-pushgateway (promtool)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    prometheus prometheus-pushgateway >/dev/null
fi

# PostgreSQL for the trials' shared-study tests (tests/pg_service.py starts its own cluster).
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  echo "== installing Debian postgresql"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi

echo "== python environment (.venv)"
python3 -m venv .venv
. .venv/bin/activate
# The CPU build on disk first: an open torch range would pull a multi-GB CUDA build.
pip install -q torch==2.13.0
pip install -q -e ".[dev]"

# checkov (the static scan of the chart, the workflow pods and the Dockerfile) pins old boto3 and
# packaging releases, so it gets a virtualenv of its own; tests/deploy/test_security_scan.py runs it.
echo "== checkov (.cache/checkov)"
mkdir -p .cache
[ -x .cache/checkov/bin/checkov ] || python3 -m venv .cache/checkov
.cache/checkov/bin/pip install -q checkov==3.3.30

# The base install's wheels and the render extra's, so tests/test_light_install.py installs the light
# client (and then `[render]`) offline.
echo "== base-install and render wheels (.cache/light-wheels)"
python - <<'PY' > .cache/base-requirements.txt
import tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("\n".join(project["dependencies"] + project["optional-dependencies"]["render"]))
PY
pip download -q -d .cache/light-wheels -r .cache/base-requirements.txt

echo "== @grafana/schema + typescript (dashboard type check)"
sh tests/grafana_schema/install.sh >/dev/null

echo "== ruff"
ruff check .
ruff format --check .

echo "== mypy"
mypy

echo "== pytest"
python -m pytest -q -p no:cacheprovider "$@"
