"""The recipe library's public names (issue 32 §4): its file I/O moved, its API did not.

`compiler.recipes.load_library`, `author` and `import_skill` are activities/recipes/disk.py's
functions, resolved on first use; the error classes stay defined in compiler/recipes/.
"""

import inspect
import subprocess
import sys

import pytest

import compiler.recipes
from activities.recipes import disk
from tests.test_layers import ROOT

# The signatures as they were when compiler/recipes/disk.py defined them: tests outside this
# repository call them.
SIGNATURES = {
    "load_library": "(*dirs: str | pathlib.Path) -> compiler.recipes.library.RecipeLibrary",
    "author": (
        "(spec: schemas.recipes.RecipeSpec | dict[str, typing.Any], "
        "library_dir: str | pathlib.Path, *, overwrite: bool = False) -> schemas.recipes.Recipe"
    ),
    "import_skill": "(path: str | pathlib.Path) -> schemas.recipes.RecipeSpec",
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_each_io_name_resolves_to_the_activity_side_function_with_its_signature(
    name: str,
) -> None:
    resolved = getattr(compiler.recipes, name)
    assert resolved is getattr(disk, name)
    assert str(inspect.signature(resolved)) == SIGNATURES[name]
    assert name in compiler.recipes.__all__


def test_from_import_and_star_import_give_the_same_functions() -> None:
    from compiler.recipes import author, import_skill, load_library

    assert (load_library, author, import_skill) == (
        disk.load_library,
        disk.author,
        disk.import_skill,
    )
    namespace: dict[str, object] = {}
    exec("from compiler.recipes import *", namespace)
    assert namespace["load_library"] is disk.load_library


def test_the_error_classes_stay_defined_in_the_compiler() -> None:
    for name in ("RecipeAuthorError", "RecipeFormatError", "RecipeImportError", "DirectiveError"):
        cls = getattr(compiler.recipes, name)
        assert cls.__module__.startswith("compiler.recipes."), (name, cls.__module__)
        assert name in compiler.recipes.__all__


def test_any_other_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="'compiler.recipes' has no attribute 'read_recipe'"):
        compiler.recipes.read_recipe  # noqa: B018 - the lookup is the test


def test_importing_compiler_recipes_alone_imports_no_io_module() -> None:
    # A fresh interpreter: this test process has imported activities/ already.
    script = (
        "import sys\n"
        "import compiler.recipes\n"
        "from compiler.recipes import RecipeAuthorError, build_plan, match\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('activities', 'workflows', 'workers', 'sqlalchemy', 'temporalio', 'boto3')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
