"""build_plan (seed 004 §4.1): composes expansion, cycle and depth guards, de-dup, badges."""

from __future__ import annotations

from compiler.recipes import MAX_COMPOSE_DEPTH, build_plan, load_library, match
from schemas.recipes import Recipe, RecipeStep
from tests.recipes.conftest import STDLIB_RECIPES, library, recipe, steps


def raw(slug: str, composes: list[str], *titles: str) -> Recipe:
    """A Recipe built directly (the validator would refuse a self-composing spec)."""
    return Recipe(
        slug=slug,
        title=slug,
        summary=slug,
        composes=composes,
        steps=[RecipeStep(index=i, title=t, body=t, prose=t) for i, t in enumerate(titles)],
        groups=[[i] for i in range(len(titles))],
    )


def titles_and_badges(plan_steps: list) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [(s.title, s.source) for s in plan_steps]


def test_composed_steps_lead_in_declaration_order() -> None:
    lib = library(
        recipe("draft", steps=steps("Outline", "Write")),
        recipe("verify", steps=steps("Check claims")),
        recipe("ship-paper", composes=["draft", "verify"], steps=steps("Compile", "Submit")),
    )
    plan = build_plan(["ship-paper"], lib)
    assert titles_and_badges(plan.steps) == [
        ("Outline", "draft"),
        ("Write", "draft"),
        ("Check claims", "verify"),
        ("Compile", "ship-paper"),
        ("Submit", "ship-paper"),
    ]
    assert [s.index for s in plan.steps] == [0, 1, 2, 3, 4]
    assert plan.recipes == ["ship-paper"]
    assert plan.composed == ["draft", "verify"]
    assert plan.contributions == {"draft": 2, "verify": 1, "ship-paper": 2}
    assert plan.groups == [[0], [1], [2], [3], [4]]
    assert plan.warnings == [] and plan.deduplicated == 0


def test_nested_composition_expands_depth_first() -> None:
    lib = library(raw("a", ["b"], "A1"), raw("b", ["c"], "B1"), raw("c", [], "C1"))
    assert [s.title for s in build_plan(["a"], lib).steps] == ["C1", "B1", "A1"]


def test_a_cycle_does_not_loop_and_warns() -> None:
    lib = library(raw("a", ["b"], "A1"), raw("b", ["a"], "B1"))
    plan = build_plan(["a"], lib)
    assert titles_and_badges(plan.steps) == [("B1", "b"), ("A1", "a")]
    assert plan.warnings == ["composes cycle a -> b -> a: not expanded again"]


def test_a_self_cycle_and_a_longer_cycle() -> None:
    assert build_plan(["s"], library(raw("s", ["s"], "S1"))).warnings == [
        "composes cycle s -> s: not expanded again"
    ]
    lib = library(raw("a", ["b"], "A"), raw("b", ["c"], "B"), raw("c", ["a"], "C"))
    plan = build_plan(["a"], lib)
    assert [s.title for s in plan.steps] == ["C", "B", "A"]
    assert plan.warnings == ["composes cycle a -> b -> c -> a: not expanded again"]


def test_a_diamond_is_expanded_once_without_a_cycle_warning() -> None:
    lib = library(
        raw("top", ["left", "right"], "Top"),
        raw("left", ["base"], "Left"),
        raw("right", ["base"], "Right"),
        raw("base", [], "Base"),
    )
    plan = build_plan(["top"], lib)
    assert [s.title for s in plan.steps] == ["Base", "Left", "Right", "Top"]
    assert plan.warnings == []


def test_depth_is_capped() -> None:
    n = MAX_COMPOSE_DEPTH + 3
    chain = [raw(f"r{i}", [f"r{i + 1}"] if i < n else [], f"Step {i}") for i in range(n + 1)]
    plan = build_plan(["r0"], library(*chain))
    kept = [s.source for s in plan.steps]
    assert kept == [f"r{i}" for i in range(MAX_COMPOSE_DEPTH, -1, -1)]
    assert plan.warnings == [
        f"r{MAX_COMPOSE_DEPTH + 1}: composition deeper than {MAX_COMPOSE_DEPTH} levels; "
        "not expanded"
    ]


def test_steps_are_deduplicated_by_normalized_title() -> None:
    lib = library(
        recipe("tests", steps=steps("Run the tests", "Report")),
        recipe("lint", steps=steps("Run lint", "report")),
        recipe("ci", composes=["tests", "lint"], steps=steps("RUN THE TESTS!", "Merge")),
    )
    plan = build_plan(["ci"], lib)
    assert titles_and_badges(plan.steps) == [
        ("Run the tests", "tests"),
        ("Report", "tests"),
        ("Run lint", "lint"),
        ("Merge", "ci"),
    ]
    assert plan.deduplicated == 2
    assert plan.contributions == {"tests": 2, "lint": 1, "ci": 1}


def test_groups_follow_the_kept_steps() -> None:
    lib = library(
        recipe("sub", steps=steps("Fetch", "Shared")),
        recipe(
            "main",
            composes=["sub"],
            steps=steps("Shared", "Left", "Right", "Join"),
            parallelism_groups=[[0], [1, 2], [3]],
        ),
    )
    plan = build_plan(["main"], lib)
    assert [s.title for s in plan.steps] == ["Fetch", "Shared", "Left", "Right", "Join"]
    # sub's two groups, then main's groups without its dropped "Shared" (a group emptied is gone)
    assert plan.groups == [[0], [1], [2, 3], [4]]


def test_several_matches_merge_in_order_and_share_steps() -> None:
    lib = library(
        recipe("one", steps=steps("Gather", "Analyse")),
        recipe("two", steps=steps("Gather", "Write up")),
    )
    scored = match("sample", lib).matches  # both tagged 'sample'
    plan = build_plan(scored, lib)
    assert plan.recipes == ["one", "two"]
    assert titles_and_badges(plan.steps) == [
        ("Gather", "one"),
        ("Analyse", "one"),
        ("Write up", "two"),
    ]
    assert build_plan([lib["one"], "two"], lib) == plan  # Recipe, slug or ScoredRecipe


def test_missing_recipes_warn() -> None:
    lib = library(raw("a", ["ghost"], "A1"))
    plan = build_plan(["a", "nowhere"], lib)
    assert [s.title for s in plan.steps] == ["A1"]
    assert plan.recipes == ["a"]
    assert plan.warnings == [
        "a composes 'ghost', which is not in the library",
        "matched recipe 'nowhere' is not in the library",
    ]


def test_directives_and_owner_are_carried_into_the_plan() -> None:
    lib = library(
        recipe(
            "looped",
            owner="acme",
            steps=[{"title": "Sweep", "body": "loop: until-dry max 4\nuses: other\nSweep it."}],
        )
    )
    (step,) = build_plan(["looped"], lib).steps
    assert step.source_owner == "acme"
    assert step.directives.loop is not None and step.directives.loop.max == 4
    assert step.directives.uses == "other"
    assert step.prose == "Sweep it."


def test_every_stdlib_recipe_builds_a_plan() -> None:
    lib = load_library(STDLIB_RECIPES)
    for r in lib:
        plan = build_plan([r.slug], lib)
        assert plan.steps, r.slug
        assert plan.warnings == [], (r.slug, plan.warnings)
        covered = sorted(i for g in plan.groups for i in g)
        assert covered == list(range(len(plan.steps))), r.slug
