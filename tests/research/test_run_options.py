"""Run options are one typed set (issue 34): a misspelled option is refused, not ignored."""

from __future__ import annotations

import dataclasses

import pytest

from app.research.run_options import RunOptions


def test_a_mapping_of_option_names_becomes_the_options_and_a_misspelled_name_is_refused() -> None:
    options = RunOptions.of({"report_max_tokens": 120, "bridge_queries": False})
    assert options.report_max_tokens == 120 and not options.bridge_queries and options.findings
    assert RunOptions.of(None) == RunOptions() and RunOptions.of(options) is options
    with pytest.raises(
        ValueError, match="no run option named bridge_querys; the options are prompt_chars"
    ):
        RunOptions.of({"bridge_querys": False})


def test_every_option_says_what_it_changes() -> None:
    for field in dataclasses.fields(RunOptions):
        assert field.metadata["allowed"].help, field.name
