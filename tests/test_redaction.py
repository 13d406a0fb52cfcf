"""One redaction for every URL that can carry a secret: what is masked, what stays readable."""

import logging

import pytest

from foxhunt import redaction
from foxhunt.redaction import MASK, NOT_A_URL, redact_url, scrub_record, scrub_text


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://foxhunt:hunter2@db:5432/optuna", "postgresql://foxhunt:***@db:5432/optuna"),
        ("postgresql://foxhunt:hun@ter2@db/optuna", "postgresql://foxhunt:***@db/optuna"),
        ("postgresql://foxhunt:hun/ter?2#x@db/optuna", "postgresql://foxhunt:***@db/optuna"),
        ("postgresql://foxhunt@db/optuna?password=hunter2", "postgresql://foxhunt@db/optuna?password=***"),
        (
            "postgresql://db/o?sslmode=require&PASSWORD=hunter2",
            "postgresql://db/o?sslmode=require&PASSWORD=***",
        ),
        ("https://push:hunter2@pushgateway:9091", "https://push:***@pushgateway:9091"),
        ("https://hunter2token@pushgateway:9091", "https://***@pushgateway:9091"),
        ("http://minio:9000/?X-Amz-Signature=hunter2", "http://minio:9000/?X-Amz-Signature=***"),
        ("http://pushgateway:9091#hunter2", "http://pushgateway:9091"),
        ("pushgateway:9091", "pushgateway:9091"),
        ("admin:hunter2@pushgateway:9091", "***@pushgateway:9091"),
        ("not a url hunter2", NOT_A_URL),
        ("http://h/\nhunter2", "http://h/?hunter2"),
    ],
)
def test_a_url_is_shown_without_its_secret(url, shown):
    assert redact_url(url) == shown


def test_what_is_no_url_is_never_shown_as_given():
    assert redact_url(None) == NOT_A_URL
    assert redact_url("hunter2", bare_host=False) == NOT_A_URL


def test_a_registered_password_is_masked_in_any_text(monkeypatch):
    monkeypatch.setattr(redaction, "_registered", set())
    redaction.register(["postgresql://u:hun@ter2@db/x?token=tok3n-value"])
    assert scrub_text("connect failed: password 'hun@ter2' rejected, tok3n-value") == (
        f"connect failed: password '{MASK}' rejected, {MASK}"
    )


def test_a_percent_encoded_password_is_masked_decoded_too(monkeypatch):
    monkeypatch.setattr(redaction, "_registered", set())
    redaction.register(["https://u:pa%2Fss-word@h"])
    assert MASK in scrub_text("pa/ss-word") and "pa%2Fss" not in scrub_text("x pa%2Fss-word")


def test_the_environments_credentials_are_registered(monkeypatch):
    monkeypatch.setattr(redaction, "_registered", set())
    redaction.register_environment(
        {"AWS_SECRET_ACCESS_KEY": "s3-secret-key", "FOXHUNT_PUSHGATEWAY": "http://u:push-pass@h"}
    )
    assert scrub_text("s3-secret-key push-pass") == f"{MASK} {MASK}"


def test_urls_inside_free_text_are_redacted():
    assert (
        scrub_text("cannot reach 'https://u:hunter2@h:1/x' now") == "cannot reach 'https://u:***@h:1/x' now"
    )


def test_a_record_is_scrubbed_in_every_string():
    record = {"config": {"pushgateway": "http://u:hunter2@h", "epochs": 3}, "list": ["http://u:pw99@h"]}
    assert scrub_record(record) == {
        "config": {"pushgateway": "http://u:***@h", "epochs": 3},
        "list": ["http://u:***@h"],
    }


def test_log_lines_are_scrubbed_with_their_arguments(monkeypatch):
    monkeypatch.setattr(redaction, "_registered", {"hunter2"})
    record = logging.LogRecord(
        "x", logging.WARNING, "f", 1, "push to %s failed (%s)", ("http://u:hunter2@h", "hunter2"), None
    )
    redaction.ScrubFilter().filter(record)
    assert record.getMessage() == f"push to http://u:***@h failed ({MASK})"


def test_a_logged_traceback_is_scrubbed(monkeypatch):
    try:
        raise ConnectionError('Could not connect to "http://key:hunter2@minio:9000/bucket"')
    except ConnectionError:
        import sys

        record = logging.LogRecord("x", logging.DEBUG, "f", 1, "retry", (), sys.exc_info())
    redaction.ScrubFilter().filter(record)
    text = logging.Formatter().format(record)
    assert "http://key:***@minio:9000/bucket" in text and "hunter2" not in text


def test_each_command_masks_only_the_secrets_it_was_given(monkeypatch):
    monkeypatch.setattr(redaction, "_registered", set())
    redaction.register(["foxhunt-test"], urls=False)  # an earlier command's secret key
    redaction.forget()
    assert scrub_text("s3://foxhunt-test/bars.csv") == "s3://foxhunt-test/bars.csv"


def test_a_database_login_without_a_password_is_a_user_name_not_a_secret():
    url = "postgresql://postgres@127.0.0.1:5432/db"

    assert redaction.redact_url(url) == url
    assert redaction.url_secrets(url) == []


def test_a_bare_token_as_an_http_user_is_still_masked():
    assert redaction.redact_url("https://tok3n-value@gateway:9091") == "https://***@gateway:9091"
