"""Tests for engram.packs.lint: the fixture packs are clean, and each kind of damage is named with its file."""

from __future__ import annotations

import pytest

from engram.packs.format import Pack, read_pack_dir
from engram.packs.lint import LintIssue, has_errors, lint_pack, parse_frontmatter
from tests.helpers.packs import FITNESS_COACH, FITNESS_COACH_KNEE

EXAMPLE = "examples/office-worker-with-knee-pain.md"


@pytest.fixture
def coach() -> Pack:
    return read_pack_dir(FITNESS_COACH)


@pytest.fixture
def knee() -> Pack:
    return read_pack_dir(FITNESS_COACH_KNEE)


def messages(issues: list[LintIssue], severity: str = "error") -> list[str]:
    return [f"{issue.path}: {issue.message}" for issue in issues if issue.severity == severity]


def test_the_fixture_packs_are_clean(coach: Pack, knee: Pack) -> None:
    assert lint_pack(coach) == []
    assert lint_pack(knee, parent=coach) == []
    unchecked = lint_pack(knee, installed={"fitness-coach"})  # installed, but not given: its files are unseen
    assert not has_errors(unchecked)
    assert messages(unchecked, "warning")[1] == (
        "examples/runner-after-meniscus-repair.md: uses knowledge/knee-injury-training.md, which is not in this "
        "pack; maybe in 'fitness-coach', which was not checked."
    )


def test_a_missing_name_description_and_role_are_errors(coach: Pack) -> None:
    del coach.meta["name"], coach.meta["description"]
    coach.files["role.md"] = "  \n"
    del coach.files["workflow.md"]

    issues = lint_pack(coach)

    assert messages(issues) == [
        "meta.json: has no name: add a name.",
        "meta.json: has no description: add a one-line description.",
        "role.md: is empty: write who the expert is.",
    ]
    assert messages(issues, "warning") == ["workflow.md: is missing: write how the expert works through a request."]
    assert has_errors(issues) and str(issues[0]).startswith("error: meta.json: has no name")


def test_an_index_entry_without_its_file_is_an_error_and_a_file_in_no_index_a_warning(coach: Pack) -> None:
    del coach.files["knowledge/fat-loss-nutrition.md"]
    coach.files["knowledge/stretching.md"] = "# Stretching\n"

    issues = lint_pack(coach)

    assert messages(issues) == [
        "knowledge/_index.md: line 10 lists knowledge/fat-loss-nutrition.md, which is missing.",
    ]
    assert "knowledge/stretching.md: is in no index: add a line for it to knowledge/_index.md." in messages(
        issues, "warning"
    )
    assert "meta.json: knowledge_count is 5 but the pack has 5." not in messages(issues, "warning")


def test_nested_indexes_under_subfolders_count_and_their_entries_are_checked(coach: Pack) -> None:
    coach.files["knowledge/_index.md"] += "\n### Mobility\n- `knowledge/mobility/_index.md` - the mobility files.\n"
    coach.files["knowledge/mobility/_index.md"] = (
        "- `knowledge/mobility/hips.md` - Hip mobility drills.\n- `knowledge/mobility/ankles.md` - Ankle drills.\n"
    )
    coach.files["knowledge/mobility/hips.md"] = "# Hips\n"
    coach.meta["knowledge_count"] = 6

    assert messages(lint_pack(coach)) == [
        "knowledge/mobility/_index.md: line 2 lists knowledge/mobility/ankles.md, which is missing."
    ]
    del coach.files["knowledge/mobility/_index.md"]
    assert "knowledge/mobility/hips.md: is in no index: add a line for it to knowledge/_index.md." in messages(
        lint_pack(coach), "warning"
    )


def test_a_missing_index_is_an_error_when_the_section_has_files(coach: Pack) -> None:
    del coach.files["examples/_index.md"]

    assert messages(lint_pack(coach)) == ["examples/_index.md: is missing: list every examples file in it."]


def test_an_entry_without_a_description_is_a_warning(coach: Pack) -> None:
    coach.files["knowledge/_index.md"] = coach.files["knowledge/_index.md"].replace(
        "`knowledge/fat-loss-nutrition.md` - Calorie deficit, protein targets and the pace of weight loss.",
        "`knowledge/fat-loss-nutrition.md`",
    )

    assert messages(lint_pack(coach), "warning") == ["knowledge/_index.md: line 10: add ' - a one-line description'."]


def test_uses_naming_a_missing_or_non_knowledge_file_is_an_error(coach: Pack) -> None:
    coach.files[EXAMPLE] = coach.files[EXAMPLE].replace(
        "  - knowledge/beginner-training-plan.md", "  - knowledge/yoga.md\n  - ../role.md\n  - role.md"
    )

    assert messages(lint_pack(coach)) == [
        f"{EXAMPLE}: uses knowledge/yoga.md, which is not in this pack.",
        f"{EXAMPLE}: uses: '../role.md' leaves the pack; give a path inside it, e.g. 'knowledge/x.md'.",
        f"{EXAMPLE}: uses role.md, which is not a knowledge file (knowledge/<file>.md).",
    ]


def test_the_examples_index_uses_lines_are_checked(coach: Pack) -> None:
    coach.files["examples/_index.md"] = coach.files["examples/_index.md"].replace(
        "uses: knowledge/muscle-building-basics.md,", "uses: knowledge/muscle-basics.md,"
    )

    assert messages(lint_pack(coach)) == [
        "examples/_index.md: line 11: uses knowledge/muscle-basics.md, which is not in this pack.",
    ]


def test_a_child_may_use_its_parents_knowledge_but_not_without_the_parent(coach: Pack, knee: Pack) -> None:
    assert lint_pack(knee, parent=coach) == []

    alone = lint_pack(knee, installed=set())

    assert messages(alone) == [
        "examples/_index.md: line 4: uses knowledge/knee-injury-training.md, which is not in this pack.",
        "examples/runner-after-meniscus-repair.md: uses knowledge/knee-injury-training.md, which is not in this pack.",
        "meta.json: extends 'fitness-coach', which is not installed: install 'fitness-coach' first.",
    ]
    del coach.files["knowledge/knee-injury-training.md"]
    assert "nor in its parent 'fitness-coach'" in messages(lint_pack(knee, parent=coach))[0]


def test_extends_is_warned_about_when_it_cannot_be_checked_and_refused_when_it_names_itself(knee: Pack) -> None:
    knee_only = Pack(name=knee.name, meta=dict(knee.meta), files={"role.md": "# Knee coach\n"})

    warnings = messages(lint_pack(knee_only), "warning")
    assert "meta.json: extends 'fitness-coach', not checked: no installed packs or folder to look in." in warnings
    knee_only.meta["extends"] = "fitness-coach-knee"
    assert "itself" in messages(lint_pack(knee_only, installed={"fitness-coach-knee"}))[0]


def test_a_parent_that_extends_another_pack_is_a_warning(coach: Pack, knee: Pack) -> None:
    coach.meta["extends"] = "athlete"

    assert "only one level loads" in messages(lint_pack(knee, parent=coach), "warning")[0]


@pytest.mark.parametrize(
    ("frontmatter", "problem"),
    [
        ("---\nuses: [knowledge/a.md\n---\n", "frontmatter is not valid YAML, line 2: a [list that is never closed"),
        ("---\nuses: knowledge/a.md\n", "frontmatter has no closing '---' line."),
        ("---\n- knowledge/a.md\n---\n", "frontmatter must be YAML key: value pairs"),
    ],
)
def test_broken_frontmatter_is_an_error(coach: Pack, frontmatter: str, problem: str) -> None:
    coach.files[EXAMPLE] = frontmatter + "Problem: knees.\n"
    coach.files["knowledge/knee-injury-training.md"] = frontmatter + "# Knees\n"

    errors = messages(lint_pack(coach))

    assert [error.split(": ", 1)[0] for error in errors] == [EXAMPLE, "knowledge/knee-injury-training.md"]
    assert all(problem in error for error in errors)


def test_uses_must_be_a_list_of_paths_and_an_example_without_uses_is_a_warning(coach: Pack) -> None:
    coach.files[EXAMPLE] = "---\nuses: {a: 1}\n---\nText\n"
    coach.files["examples/postpartum-recovery.md"] = "---\ntitle: Postpartum\n---\nText\n"

    issues = lint_pack(coach)

    assert messages(issues) == [f"{EXAMPLE}: uses: must be a list of paths, e.g. [knowledge/x.md]."]
    assert messages(issues, "warning") == [
        "examples/postpartum-recovery.md: has no uses: in its frontmatter: list the knowledge it uses."
    ]


def test_frontmatter_parses_inline_and_block_lists_and_no_frontmatter_is_empty() -> None:
    assert parse_frontmatter("---\nuses: [knowledge/a.md, knowledge/b.md]\n---\n")["uses"] == [
        "knowledge/a.md",
        "knowledge/b.md",
    ]
    assert parse_frontmatter("---\nuses:\n  - knowledge/a.md\n---\nbody\n---\n") == {"uses": ["knowledge/a.md"]}
    assert parse_frontmatter("# Title\n") == {}
    assert parse_frontmatter("---\n---\n") == {}


def test_wrong_counts_and_tags_in_meta_are_warnings(coach: Pack) -> None:
    coach.meta["examples_count"] = 7
    coach.meta["tags"] = "fitness"

    assert messages(lint_pack(coach), "warning") == [
        'meta.json: tags should be a list of words, e.g. ["fitness", "nutrition"].',
        "meta.json: examples_count is 7 but the pack has 3.",
    ]
