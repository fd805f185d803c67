"""The build-context matcher of tests/hosting/build_context.py, rule by rule.

Each case is an example of Docker's documentation of ``.dockerignore``
(https://docs.docker.com/build/concepts/context/#dockerignore-files) on a small tree.
"""

from __future__ import annotations

import pytest

from .build_context import (
    context_files,
    copy_arguments,
    copy_sources,
    dockerignore_rules,
    missing_sources,
)

TREE = (
    "Dockerfile",
    "README.md",
    "README-secret.md",
    "README-public.md",
    "CHANGES.md",
    "main.go",
    "tempa",
    "tempb",
    "temp12",
    "somedir/temporary.txt",
    "somedir/temp/inside.txt",
    "somedir/kept.txt",
    "somedir/notes.md",
    "somedir/subdir/temporary.txt",
    "somedir/subdir/kept.go",
    "docs/statistics.md",
    "docs/hosting.md",
    "docs/deep/page.md",
)


@pytest.fixture
def tree(tmp_path):
    for name in TREE:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    return tmp_path


def excluded(tree, rules: str) -> set[str]:
    """What ``rules`` keep out of the context of :data:`TREE` (``.dockerignore`` aside)."""
    return set(TREE) - context_files(tree, rules)


def test_comments_and_blank_lines_are_not_rules():
    text = "\ufeff# comment\n\n   \n*.md\n  # not a comment: a rule\n!README.md\n"
    assert dockerignore_rules(text) == ["*.md", "# not a comment: a rule", "!README.md"]


def test_single_star_stays_within_one_level(tree):
    # "*/temp*": names starting with temp in any immediate subdirectory of the root.
    assert excluded(tree, "# comment\n*/temp*") == {
        "somedir/temporary.txt",
        "somedir/temp/inside.txt",  # the folder somedir/temp, with its contents
    }
    # "*/*/temp*": two levels below the root (somedir/temp/inside.txt is not).
    assert excluded(tree, "*/*/temp*") == {"somedir/subdir/temporary.txt"}


def test_question_mark_is_one_character(tree):
    assert excluded(tree, "temp?") == {"tempa", "tempb"}


def test_double_star_spans_any_number_of_folders(tree):
    assert excluded(tree, "**/*.go") == {"main.go", "somedir/subdir/kept.go"}


def test_an_exception_re_includes_and_the_last_matching_rule_wins(tree):
    # "*.md" matches at the root only; "!README.md" takes README.md back.
    assert excluded(tree, "*.md\n!README.md") == {
        "README-secret.md",
        "README-public.md",
        "CHANGES.md",
    }
    # No markdown files but README files other than README-secret.md.
    assert excluded(tree, "*.md\n!README*.md\nREADME-secret.md") == {
        "README-secret.md",
        "CHANGES.md",
    }
    # All README files: the middle line has no effect, "!README*.md" comes last.
    assert excluded(tree, "*.md\nREADME-secret.md\n!README*.md") == {"CHANGES.md"}


def test_an_excluded_folder_keeps_out_its_contents_but_an_exception_under_it(tree):
    assert excluded(tree, "docs") == {"docs/statistics.md", "docs/hosting.md", "docs/deep/page.md"}
    assert excluded(tree, "docs\n!docs/statistics.md") == {"docs/hosting.md", "docs/deep/page.md"}
    # An exception before the rule that excludes its folder has no effect.
    assert "docs/statistics.md" in excluded(tree, "!docs/statistics.md\ndocs")


def test_leading_slash_and_dot_elements_are_cleaned(tree):
    assert excluded(tree, "/docs/hosting.md") == {"docs/hosting.md"}
    assert excluded(tree, "./somedir/../docs/hosting.md/") == {"docs/hosting.md"}
    assert excluded(tree, ".") == set()  # "for historical reasons, the pattern . is ignored"


def test_the_dockerfile_stays_in_the_context(tree):
    assert "Dockerfile" in context_files(tree, "*")


def test_copy_sources_and_what_the_context_lacks():
    instructions = [
        ("COPY", "--chown=1:1 requirements/app.txt ./requirements/app.txt"),
        ("COPY", "--from=build /opt/venv /opt/venv"),
        ("ADD", '["docs/statistics.md", "./app/"]'),
        ("ADD", "https://example.org/file.tar.gz /tmp/"),
        ("COPY", "assets/*.css ./static/"),
        ("RUN", "cp a b"),
    ]
    assert copy_arguments(instructions[0][1]) == (
        ["--chown=1:1"],
        ["requirements/app.txt", "./requirements/app.txt"],
    )
    sources = copy_sources(instructions)
    assert sources == ["requirements/app.txt", "docs/statistics.md", "assets/*.css"]
    files = {"requirements/app.txt", "assets/css/site.css"}
    # A file must be in the context; a pattern's "*" does not cross a "/".
    assert missing_sources(sources, files) == ["docs/statistics.md", "assets/*.css"]
    assert missing_sources(["assets", "assets/*/*.css", "."], files) == []
