"""The study storage URL forms foxhunt accepts before work, and the chart's documented form, opened
against the suite's real PostgreSQL."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from foxhunt.config.urls import study_storage_problem
from foxhunt.errors import BadInput
from foxhunt.search.storage import check_storage_url, rdb_storage

CHART = Path(__file__).resolve().parents[2] / "helm" / "foxhunt"
DOCUMENTED = {
    "README.md": r"url='(postgresql[^']*)'",
    "templates/NOTES.txt": r"url=(postgresql\S*)",
    "values.yaml": r"(postgresql[^;)\s]*)",
}


def documented_forms() -> list[tuple[str, str]]:
    forms = []
    for name, pattern in DOCUMENTED.items():
        match = re.search(pattern, (CHART / name).read_text())
        assert match, f"{name} documents no study URL"
        forms.append((name, match.group(1)))
    return forms


def on_server(documented: str, postgres_server) -> str:
    """The documented URL's scheme and driver, pointed at the test server with a password."""
    scheme = documented.partition("://")[0]
    return f"{scheme}://postgres:any-password@127.0.0.1:{postgres_server.port}/postgres"


@pytest.mark.parametrize(("name", "form"), documented_forms(), ids=[n for n, _ in documented_forms()])
def test_the_charts_documented_study_url_opens_a_study(name, form, postgres_server):
    url = on_server(form, postgres_server)
    check_storage_url(url)
    storage = rdb_storage(url, heartbeat_seconds=60, grace_seconds=120, max_retry=1)
    assert storage.get_all_studies() is not None


@pytest.mark.parametrize("scheme", ["postgresql", "postgresql+psycopg", "postgresql+psycopg2"])
def test_every_postgres_form_opens_with_the_installed_psycopg(scheme, postgres_server):
    url = f"{scheme}://postgres@127.0.0.1:{postgres_server.port}/postgres"
    check_storage_url(url)
    assert (
        rdb_storage(url, heartbeat_seconds=60, grace_seconds=120, max_retry=1).get_all_studies() is not None
    )


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("mysql://u:p@db/x", "uses mysql, for which this image has no driver"),
        ("postgresql+asyncpg://u:p@db/x", "uses postgresql+asyncpg"),
        ("postgresql://u:p@ss@db/x", "percent-encode it as %40"),
        ("postgresql://u:p@db:port/x", "not a usable SQLAlchemy URL"),
        ("postgresql:///x", "names no host"),
        ("sqlite://", "names no file"),
        ("sqlite:///:memory:", "names no file"),
        ("sqlite:////nonexistent-folder/study.db", "folder does not exist"),
        ("db.example/x", "is not a usable SQLAlchemy URL"),
    ],
)
def test_a_study_storage_that_cannot_work_is_named_before_work(url, problem):
    assert problem in (study_storage_problem(url) or "")


def test_an_sqlite_file_that_is_no_database_is_refused(tmp_path):
    text = tmp_path / "passwd"
    text.write_text("root:x:0:0:root:/root:/bin/bash\n")
    with pytest.raises(BadInput, match="is not an SQLite database"):
        check_storage_url(f"sqlite:///{text}")
    assert text.read_text().startswith("root:x")


def test_an_sqlite_database_a_new_file_or_an_empty_one_is_accepted(tmp_path):
    db = tmp_path / "study.db"
    sqlite3.connect(db).execute("create table t (x)").connection.commit()
    (tmp_path / "empty.db").write_bytes(b"")
    for name in ("study.db", "new.db", "empty.db"):
        assert study_storage_problem(f"sqlite:///{tmp_path / name}") is None


def test_the_redacted_form_of_a_refused_url_hides_its_password():
    with pytest.raises(BadInput) as err:
        check_storage_url("mysql://u:hunter2@db/x")
    assert "hunter2" not in str(err.value) and make_url("mysql://u:***@db/x").drivername in str(err.value)
