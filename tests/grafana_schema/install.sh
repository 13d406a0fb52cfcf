#!/bin/sh
# Installs the exact versions in package-lock.json (@grafana/schema, typescript) from the npm registry.
set -eu
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --ignore-scripts
