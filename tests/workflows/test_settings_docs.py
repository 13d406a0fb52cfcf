"""docs/settings.md is the generator's output from foxhunt.config and the workflow parameter schema, so it
says what the code does: every flag, every DQN key and every workflow parameter, with their defaults."""

from __future__ import annotations

from pathlib import Path

from foxhunt.config import PIPELINE_DQN, DQNConfig
from foxhunt.config.flags import FLAGS
from foxhunt_workflows.params import pipeline_parameter_names
from foxhunt_workflows.settings_docs import PAGE, cell, settings_page, update_page

REPO = Path(__file__).resolve().parents[2]


def row_of(page: str, first_cell: str) -> list[str]:
    """The cells of the table row that starts with `first_cell`."""
    line = next(x for x in page.splitlines() if x.startswith(f"| {first_cell} |"))
    return [c.strip() for c in line.strip("|").split(" | ")]


def test_the_committed_settings_page_is_the_generators_output():
    assert (REPO / PAGE).read_text() == settings_page(), (
        f"run: python -m foxhunt_workflows.settings_docs {PAGE}"
    )


def test_the_page_has_a_row_for_every_flag_dqn_key_and_workflow_parameter():
    page = settings_page()
    names = [f"`--{f}`" for f in FLAGS]
    names += [f"`{k}`" for k in DQNConfig.__dataclass_fields__]
    names += [f"`{p}`" for p in pipeline_parameter_names()]

    assert [n for n in names if f"| {n} |" not in page] == []


def test_a_dqn_rows_defaults_are_trains_and_the_pipelines():
    cells = row_of(settings_page(), "`lr`")

    assert cells[-2:] == [str(DQNConfig().lr), str(PIPELINE_DQN.lr)] == ["0.0003", "0.001"]


def test_a_flags_row_gives_its_unit_and_range_and_both_defaults():
    cells = row_of(settings_page(), "`--train-days`")

    assert cells[1:] == [
        "`folds.train_days`",
        "Length of a fold's training window.",
        "a finite number in (0, 36500] (days)",
        "120",
        "60",
    ]


def test_a_pipe_in_a_doc_does_not_split_its_table_cell():
    assert cell("|Q| beyond this") == "\\|Q\\| beyond this"
    assert cell("") == "none"


def test_update_page_writes_only_when_the_page_differs(tmp_path):
    page = tmp_path / "docs" / "settings.md"

    assert update_page(page) is True
    assert page.read_text() == settings_page()
    assert update_page(page) is False
