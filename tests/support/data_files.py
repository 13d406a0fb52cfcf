"""The real inputs the suite reads, all inside the repository (tests/data/README.md names their sources)."""

from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
# The first 120,789 EURUSD minute bars of 2018 (to 2018-04-29 23:59 UTC); volume is zero on every row.
EURUSD = DATA / "EURUSD_M1_2018_head.parquet"
EURUSD_ROWS = 120_789
# The first 40,000 YNDX (MOEX) minute bars of 2015 (to 2015-04-24 12:23 UTC), with real volume.
YNDX = DATA / "YNDX_M1_2015_head.parquet"
YNDX_ROWS = 40_000
# The official Argo Workflows v4 JSON schema, unpatched (tests patch it in memory).
ARGO_SCHEMA = DATA / "argo-workflows-v4-schema.json"
