"""`forge recipes`: match a prompt (the Discovery panel), show, list, check and import recipes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from schemas.error_codes import ErrorCode
from workers.cli.common import VerbGroup, err, fail, out, settings

if TYPE_CHECKING:
    from compiler.recipes import RecipeLibrary
    from schemas.recipes import LibraryProblem, LoopSpec, MatchResult, Recipe, RecipeFitness

__all__ = ["recipes_app"]

recipes_app = typer.Typer(
    cls=VerbGroup,
    help="The recipe library: match a prompt, show, list, check and import recipes.",
    no_args_is_help=True,
)

EXIT_PROBLEMS = 1
_ALTERNATIVES = 4  # a low-confidence selection lists this many runners-up


def _library() -> RecipeLibrary:
    from activities.recipes.disk import load_library
    from activities.recipes.fitness import library_dirs

    s = settings()
    return load_library(*library_dirs(s.packs_path, s.home))


def _fitness_table() -> tuple[dict[str, RecipeFitness], str | None]:
    """The fitness of every tagged recipe, or ({}, why the library is cold this time)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError

    from activities.recipes.fitness import recipe_fitness
    from activities.store.errors import StoreError
    from activities.store.events import open_event_store

    url = settings().database_url
    try:
        parsed = make_url(url)
    except ArgumentError:
        return {}, f"FORGE_DATABASE_URL {url!r} does not parse: cold library (no fitness)"
    if parsed.get_backend_name() == "sqlite" and not Path(parsed.database or "").is_file():
        return {}, "no event store yet: cold library (no fitness)"
    try:
        with open_event_store(url) as store:
            return recipe_fitness(store), None
    except (StoreError, ValueError, SQLAlchemyError) as exc:
        first = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        return {}, f"cannot read the event store ({first}): cold library (no fitness)"


# ---- match: the Discovery panel ------------------------------------------------------------


@recipes_app.command("match")
def match_cmd(
    prompt: Annotated[str, typer.Argument(metavar="PROMPT")],
    threshold: Annotated[
        float | None, typer.Option("--threshold", help="Score a recipe must reach (default 3).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the MatchResult as JSON.")] = False,
) -> None:
    """Score PROMPT against the library: candidates, threshold, and what is selected."""
    from activities.recipes.fitness import fitness_lookup
    from compiler.recipes import effort_signals, match

    library = _library()
    table, cold = _fitness_table()
    result = match(prompt, library, threshold=threshold, fitness=fitness_lookup(table))
    if as_json:
        if cold:
            err.print(f"[dim]{escape(cold)}[/]")
        typer.echo(result.model_dump_json(indent=2))
        return
    signals = effort_signals(prompt)
    cues = ", ".join([*signals.deep_verbs, *signals.ultra_cues]) or "none"
    out.print(
        f"[bold]Discovery[/] · {result.catalog_size} recipes in the catalog · effort "
        f"[bold]{signals.tier}[/] (score {signals.score}, {signals.words} words, cues: "
        f"{escape(cues)})"
    )
    if signals.tier == "trivial":
        out.print("[dim]a trivial prompt: a run would get no plan; this match is for inspection[/]")
    if cold:
        out.print(f"[dim]{escape(cold)}[/]")
    elif table:
        out.print(f"[dim]fitness: {len(table)} recipe(s) with a run record[/]")
    if result.considered:
        out.print(_candidates(result, table))
    else:
        out.print("no recipe has any evidence for this prompt")
    out.print(f"threshold {result.threshold:g}")
    _selection(result)
    for problem in library.problems:
        out.print(f"[yellow]skipped:[/] {escape(problem.source)}: {escape(problem.reason)}")


def _candidates(result: MatchResult, table: dict[str, RecipeFitness]) -> Table:
    grid = Table(title=f"{len(result.considered)} scored candidate(s)", title_justify="left")
    grid.add_column("slug", style="bold", no_wrap=True)
    grid.add_column("score", justify="right")
    grid.add_column("anti-trigger", justify="right")
    grid.add_column("fitness", justify="right")
    grid.add_column("record", overflow="fold")
    grid.add_column("vetoed")
    grid.add_column("hits", overflow="fold")
    for c in result.considered:
        score = f"{c.score:g}" if c.score >= result.threshold else f"[dim]{c.score:g}[/]"
        record = table.get(f"{c.owner}/{c.slug}")
        grid.add_row(
            escape(c.slug if c.owner == "forge" else f"{c.owner}/{c.slug}"),
            score,
            f"[red]-{c.anti_penalty:g}[/]" if c.anti_penalty else "0",
            f"[green]{c.fitness_adjustment:+.2f}[/]" if c.fitness_adjustment else "0",
            _record(record),
            "[red]vetoed[/]" if c.anti_vetoed else "no",
            escape(", ".join(c.hits)),
        )
    return grid


def _record(record: RecipeFitness | None) -> str:
    if record is None:
        return "-"
    return (
        f"{record.successes}/{record.runs} ok · adj {record.adjustment:+.2f}"
        + (f" · {record.mean_latency_s:.0f}s" if record.mean_latency_s is not None else "")
        + (f" · {record.mean_tokens:,.0f} tok" if record.mean_tokens else "")
    )


def _selection(result: MatchResult) -> None:
    top = result.selected
    if top is None:
        best = result.considered[0] if result.considered else None
        why = f" (best: {best.slug} at {best.score:g})" if best else ""
        out.print(
            f"[bold yellow]NO-MATCH[/]: no recipe reached the threshold {result.threshold:g}"
            f"{escape(why)}"
        )
        return
    colour = "green" if result.tier == "high" else "yellow"
    out.print(f"[bold {colour}]SELECTED {escape(top.slug)} ({result.tier})[/]")
    if result.tier == "low":
        reason = "vetoed by an anti-trigger" if top.anti_vetoed else "no clear lead"
        rest = [f"{m.slug} ({m.score:g})" for m in result.matches[1 : 1 + _ALTERNATIVES]]
        out.print(f"low confidence ({reason}); alternatives: {escape(', '.join(rest) or 'none')}")


# ---- show, list ----------------------------------------------------------------------------


@recipes_app.command("show")
def show_cmd(slug: Annotated[str, typer.Argument(metavar="SLUG")]) -> None:
    """One recipe: its frontmatter, source file and steps."""
    from rapidfuzz import process

    library = _library()
    recipe = library.get(slug)
    if recipe is None:
        close = [m[0] for m in process.extract(slug, library.slugs, limit=3, score_cutoff=50)]
        hint = f"did you mean {', '.join(close)}?" if close else "see `forge recipes list`"
        fail(f"no recipe {slug!r} in the library", hint, code=ErrorCode.RECIPE_NOT_FOUND)
    out.print(f"[bold]{escape(recipe.title)}[/] ({escape(recipe.key)})")
    out.print(f"[dim]{escape(recipe.source)}[/]")
    for note in library.shadowed.get(recipe.slug, []):
        out.print(f"[yellow]overrides[/] {escape(note)}")
    fields = Table(show_header=False, box=None, pad_edge=False)
    fields.add_column(style="cyan", no_wrap=True)
    fields.add_column(overflow="fold")
    for name, value in _frontmatter(recipe):
        fields.add_row(name, escape(value))
    out.print(fields)
    out.print(_steps_table(recipe))


def _frontmatter(recipe: Recipe) -> list[tuple[str, str]]:
    rows = [
        ("summary", recipe.summary),
        ("tags", ", ".join(recipe.tags)),
        ("not-when", ", ".join(recipe.not_when) or "-"),
        ("composes", ", ".join(recipe.composes) or "-"),
        ("loads-in", ", ".join(recipe.loads_in)),
        ("authoredBy", recipe.authored_by),
        ("owner", recipe.owner),
        ("category", recipe.category),
        ("domain-packs", ", ".join(recipe.domain_packs) or "-"),
        ("workflow-packs", ", ".join(recipe.workflow_packs) or "-"),
        ("parallelism", str([[i + 1 for i in g] for g in recipe.groups])),
    ]
    rows += [(f"lineage.{k}", v) for k, v in sorted(recipe.lineage.items())]
    return rows


def _steps_table(recipe: Recipe) -> Table:
    group_of = {i: n for n, group in enumerate(recipe.groups, start=1) for i in group}
    grid = Table(title=f"{len(recipe.steps)} step(s)", title_justify="left", show_lines=True)
    for col in ("#", "title", "done-when", "loop", "uses", "invoke skill", "group"):
        grid.add_column(col, overflow="fold")
    for step in recipe.steps:
        d = step.directives
        n = group_of.get(step.index)
        members = recipe.groups[n - 1] if n else []
        group = "-" if n is None else str(n)
        if len(members) > 1:
            group += " ‖ " + ", ".join(str(i + 1) for i in members)
        grid.add_row(
            str(step.index + 1),
            escape(step.title),
            escape(d.done_when or "-"),
            _loop(d.loop),
            escape(d.uses or "-"),
            escape(d.invoke_skill or "-"),
            group,
        )
    return grid


def _loop(loop: LoopSpec | None) -> str:
    if loop is None:
        return "-"
    text = {
        "count": f"count {loop.max}",
        "until-dry": f"until-dry max {loop.max}",
        "until-marker": f"until {loop.marker} max {loop.max}",
    }[loop.mode]
    clamped = f" (clamped from {loop.clamped_from})" if loop.clamped_from is not None else ""
    return escape(text + clamped)


@recipes_app.command("list")
def list_cmd() -> None:
    """Every recipe in the library (stdlib, FORGE_PACKS_PATH, FORGE_HOME/recipes)."""
    library = _library()
    grid = Table(title=f"{len(library)} recipe(s)", title_justify="left")
    for col in ("slug", "title", "category", "authoredBy", "owner", "steps", "source dir"):
        grid.add_column(col, overflow="fold")
    for r in library:
        grid.add_row(
            escape(r.slug),
            escape(r.title),
            r.category,
            r.authored_by,
            escape(r.owner),
            str(len(r.steps)),
            escape(str(_source_dir(r))),
        )
    out.print(grid)
    for slug, sources in sorted(library.shadowed.items()):
        out.print(f"[yellow]override:[/] {slug} overrides {escape(', '.join(sources))}")
    if library.problems:
        out.print(_problems_table(library.problems))


def _source_dir(recipe: Recipe) -> Path:
    from activities.recipes.disk import RECIPE_FILE

    path = Path(recipe.source)
    return path.parent.parent if path.name == RECIPE_FILE else path.parent


def _problems_table(problems: list[LibraryProblem]) -> Table:
    grid = Table(title=f"{len(problems)} problem(s)", title_justify="left", show_lines=True)
    grid.add_column("file", style="cyan", overflow="fold")
    grid.add_column("problem", overflow="fold")
    for p in problems:
        grid.add_row(escape(p.source), escape(p.reason))
    return grid


# ---- check, import -------------------------------------------------------------------------


@recipes_app.command("check")
def check_cmd(directory: Annotated[Path, typer.Argument(metavar="DIR")]) -> None:
    """Check a directory of recipes: each parses, and composes:/uses: name a known recipe."""
    from activities.recipes.disk import load_library
    from compiler.recipes import RecipeLibrary

    if not directory.is_dir():
        fail(
            f"{directory}: not a directory",
            "give the directory that holds <slug>/recipe.md",
            code=ErrorCode.FILE_UNUSABLE,
        )
    own = load_library(directory)
    default = _library()
    merged = RecipeLibrary(recipes=[*default, *own])
    problems = list(own.problems)
    for recipe in own:
        problems += _reference_problems(recipe, merged)
    for recipe in own:
        if not any(p.source == recipe.source for p in problems):
            note = " [yellow](overrides the library's)[/]" if _overrides(recipe, default) else ""
            out.print(
                f"[green]✓[/] {escape(recipe.slug)}: {len(recipe.steps)} steps "
                f"[dim]{escape(recipe.source)}[/]{note}"
            )
    if problems:
        out.print(_problems_table(problems))
        out.print(f"[red]✗[/] {directory}: {len(problems)} problem(s)")
        raise typer.Exit(EXIT_PROBLEMS)
    if not len(own):
        out.print(f"[yellow]{directory}: no recipes found[/] (expected <slug>/recipe.md)")
        return
    out.print(f"[green]✓[/] {directory}: {len(own)} recipe(s) check out")


def _overrides(recipe: Recipe, library: RecipeLibrary) -> bool:
    other = library.get(recipe.slug)
    return other is not None and Path(other.source).resolve() != Path(recipe.source).resolve()


def _reference_problems(recipe: Recipe, library: RecipeLibrary) -> list[LibraryProblem]:
    """composes:/uses: targets missing from DIR + the library, and composes cycles."""
    from compiler.recipes import build_plan
    from schemas.recipes import LibraryProblem

    reasons = [
        f"composes {target!r}, which is neither in this directory nor in the library"
        for target in recipe.composes
        if target not in library
    ]
    reasons += [
        f"step {s.index + 1} ({s.title}) uses {s.directives.uses!r}, which is neither in this "
        "directory nor in the library"
        for s in recipe.steps
        if s.directives.uses and s.directives.uses not in library
    ]
    plan = build_plan([recipe.slug], library)
    reasons += [w for w in plan.warnings if "cycle" in w or "deeper than" in w]
    return [LibraryProblem(source=recipe.source, reason=r) for r in reasons]


@recipes_app.command("import")
def import_cmd(
    skill_dir: Annotated[Path, typer.Argument(metavar="SKILL_DIR")],
    into: Annotated[
        Path | None,
        typer.Option("--into", help="Recipe directory to write to (default FORGE_HOME/recipes)."),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an earlier import of the same skill.")
    ] = False,
) -> None:
    """Transpile a SKILL.md into a recipe (low trust: authoredBy skill-bridge) and write it."""
    from activities.recipes.disk import author, import_skill
    from compiler.recipes import RecipeAuthorError, RecipeImportError

    target = into if into is not None else settings().home / "recipes"
    try:
        spec = import_skill(skill_dir)
        recipe = author(spec, target, overwrite=overwrite)
    except (RecipeImportError, RecipeAuthorError) as exc:
        fail(f"not imported: {exc}; nothing was written", code=exc.code)
    except OSError as exc:
        fail(
            f"not imported: cannot write to {target}: {exc.strerror or exc}",
            "give --into a directory you may write to",
            code=ErrorCode.RECIPE_IMPORT_REFUSED,
        )
    out.print(_steps_table(recipe))
    out.print(
        f"[green]✓[/] imported skill {escape(skill_dir.name)} as {escape(recipe.key)} "
        f"(authoredBy {recipe.authored_by}) → {escape(recipe.source)}"
    )
