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

echo "== [${SECONDS}s] python environment (.venv)"
python3 -m venv .venv
. .venv/bin/activate
# The CPU build on disk first: an open torch range would pull a multi-GB CUDA build. --no-compile: pip would
# byte-compile every module of every package (53 s of a fresh machine's 113 s here, torch's and botocore's
# thousands of files); Python compiles the few hundred the tests import on first import instead (about 8 s).
pip install -q --no-compile torch==2.13.0
pip install -q --no-compile -e ".[dev]"

mkdir -p .cache
# The suite runs as two sessions side by side, one a core: a session keeps about one core busy (in-process
# training on one torch thread; its background queue of fresh-process runs ends within its first minutes),
# and the machines CI gives have two. The first session takes these folders, the second every other test.
# The first needs none of the installs below nor ruff's and mypy's verdicts, so it starts now, on the core
# they leave mostly idle (mypy is one thread; the installs wait on the network and the disk); its folders
# hold that much more work so that the two sessions end together. With arguments, one session runs them
# as given, after the checks.
first_session=(tests/run tests/bench tests/seeds)
if [ "$#" -eq 0 ]; then
  echo "== [${SECONDS}s] pytest, the first session in the background (.cache/pytest-first.log): ${first_session[*]}"
  python -m pytest -q -p no:cacheprovider "${first_session[@]}" > .cache/pytest-first.log 2>&1 &
  first_job=$!
  trap 'kill "$first_job" 2>/dev/null || true' EXIT
fi

# Three installs that only some tests need run in the background while ruff and mypy check the code;
# each logs to .cache/<name>.log and the script stops, showing that log, if one fails.
# checkov (the static scan of the chart, the workflow pods and the Dockerfile) pins old boto3 and
# packaging releases, so it gets a virtualenv of its own; tests/deploy/test_security_scan.py runs it.
echo "== checkov (.cache/checkov), in the background"
(
  [ -x .cache/checkov/bin/checkov ] || python3 -m venv .cache/checkov
  .cache/checkov/bin/pip install -q --no-compile checkov==3.3.30
) > .cache/checkov-install.log 2>&1 &
checkov_job=$!

# The base install's wheels and the render extra's, so tests/test_light_install.py installs the light
# client (and then `[render]`) offline.
echo "== base-install and render wheels (.cache/light-wheels), in the background"
python - <<'PY' > .cache/base-requirements.txt
import tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("\n".join(project["dependencies"] + project["optional-dependencies"]["render"]))
PY
pip download -q -d .cache/light-wheels -r .cache/base-requirements.txt > .cache/light-wheels.log 2>&1 &
wheels_job=$!

echo "== @grafana/schema + typescript (dashboard type check), in the background"
sh tests/grafana_schema/install.sh > .cache/grafana-schema.log 2>&1 &
grafana_job=$!

echo "== [${SECONDS}s] ruff"
ruff check .
ruff format --check .

echo "== [${SECONDS}s] mypy"
mypy

echo "== [${SECONDS}s] waiting for the background installs"
for job in "$checkov_job .cache/checkov-install.log" "$wheels_job .cache/light-wheels.log" \
    "$grafana_job .cache/grafana-schema.log"; do
  read -r pid log <<< "$job"
  if ! wait "$pid"; then
    echo "a background install failed; its log, $log:" >&2
    cat "$log" >&2
    exit 1
  fi
done

if [ "$#" -gt 0 ]; then
  echo "== [${SECONDS}s] pytest"
  python -m pytest -q -p no:cacheprovider "$@"
else
  ignored=()
  for folder in "${first_session[@]}"; do ignored+=("--ignore=$folder"); done
  echo "== [${SECONDS}s] pytest, the second session: tests but ${first_session[*]}"
  second_status=0
  python -m pytest -q -p no:cacheprovider tests "${ignored[@]}" || second_status=$?
  first_status=0
  wait "$first_job" || first_status=$?
  echo "== [${SECONDS}s] pytest, the first session (.cache/pytest-first.log)"
  if [ "$first_status" -ne 0 ]; then cat .cache/pytest-first.log; else tail -n 25 .cache/pytest-first.log; fi
  if [ "$first_status" -ne 0 ] || [ "$second_status" -ne 0 ]; then exit 1; fi
fi
