"""The dependency direction of DESIGN.md §1, and the purity of compiler/, checked on the AST.

schemas <- compiler <- activities <- workflows <- workers
"""

import ast
import gc
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ["schemas", "compiler", "activities", "workflows", "workers"]
# Third-party libraries each layer may import (the standard library is checked separately).
THIRD_PARTY = {
    "schemas": {"pydantic"},
    "compiler": {
        "pydantic",
        "rfc8785",
        "orjson",
        "jsonschema",
        "snowballstemmer",
        "json_logic",
        "rapidfuzz",
        "yaml",
        "re2",  # google-re2: the credential rules (RE2 syntax, linear-time matching)
    },
}
# Standard-library modules that would give compiler/ a clock, randomness, the environment or I/O.
IMPURE = {
    "os",
    "sys",
    "time",
    "random",
    "uuid",
    "socket",
    "subprocess",
    "pathlib",
    "io",
    "shutil",
    "datetime",
    "secrets",
    "tempfile",
    "glob",
    "threading",
    "asyncio",
    "urllib",
    "http",
}


# The one upward import compiler/ may hold: the compatibility alias of issue 32 §4. The recipe
# library's file I/O lives in activities/recipes/disk.py; `compiler.recipes.load_library`,
# `author` and `import_skill` stay public, resolved by the package's module `__getattr__`
# (PEP 562) on first use. Only that function, only that module: importing compiler/ still
# imports nothing above it.
LAZY_ALIAS = (Path("compiler/recipes/__init__.py"), "__getattr__", "activities.recipes.disk")
# Modules that compute with timestamps the workflow hands them (workflow.now()): they import
# datetime for its types and arithmetic and never read the clock (checked below).
TIME_ARITHMETIC = {
    Path("compiler/run/gates.py"): {"datetime"},
    Path("compiler/run/state.py"): {"datetime"},
    Path("compiler/run/waits.py"): {"datetime"},
}
_CLOCK_CALLS = re.compile(r"\.(now|utcnow|today|fromtimestamp)\(|\btime\(\)")


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _parse(path: Path) -> ast.Module:
    """`path`'s syntax tree, parsed with the garbage collector paused.

    CPython 3.11.7 (this machine's) can fail an ast.parse with a spurious "SystemError: AST
    constructor recursion depth mismatch" when a collection runs finalizers in the middle of it
    (python/cpython#106905, fixed in later releases): seen once in this suite, when an
    unfinished workflow coroutine of an earlier test in the same process was collected.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    finally:
        if enabled:
            gc.enable()


def _imports(path: Path) -> set[str]:
    """The top-level package of every import in `path`, wherever it is (LAZY_ALIAS's aside)."""
    tree = _parse(path)
    skip: set[int] = set()
    if path == ROOT / LAZY_ALIAS[0]:
        skip = {id(node) for node in _alias_imports(tree)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def _alias_imports(tree: ast.Module) -> list[ast.stmt]:
    """The imports of exactly LAZY_ALIAS's module inside its module-level function."""
    _, function, module = LAZY_ALIAS
    found: list[ast.stmt] = []
    for top in tree.body:
        if isinstance(top, ast.FunctionDef) and top.name == function:
            for node in ast.walk(top):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = {f"{node.module}.{a.name}" for a in node.names}
                    if names == {module}:
                        found.append(node)
                elif isinstance(node, ast.Import) and [a.name for a in node.names] == [module]:
                    found.append(node)
    return found


@pytest.mark.parametrize("layer", LAYERS)
def test_layers_only_import_downwards(layer: str) -> None:
    allowed_own = set(LAYERS[: LAYERS.index(layer) + 1])
    above = set(LAYERS) - allowed_own
    for path in _modules(layer):
        bad = _imports(path) & (above | {"tests"})
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)} (a higher layer)"


@pytest.mark.parametrize("layer", sorted(THIRD_PARTY))
def test_pure_layers_import_only_pure_libraries(layer: str) -> None:
    stdlib = set(sys.stdlib_module_names)
    for path in _modules(layer):
        for name in _imports(path) - set(LAYERS) - {"__future__"}:
            if name in stdlib:
                rel = path.relative_to(ROOT)
                allowed = TIME_ARITHMETIC.get(rel, set())
                assert layer != "compiler" or name not in IMPURE - allowed, (
                    f"{path.relative_to(ROOT)} imports {name}: compiler/ must stay pure"
                )
            else:
                assert name in THIRD_PARTY[layer], (
                    f"{path.relative_to(ROOT)} imports third-party {name!r}"
                )


def test_compiler_calls_no_io_builtins() -> None:
    for path in _modules("compiler"):
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in {"open", "input", "eval", "exec", "print"}, (
                    f"{path.relative_to(ROOT)}:{node.lineno} calls {node.func.id}()"
                )


# Code that runs inside the sandbox, not in Forge's processes: the bridge client reads the
# socket path the runner put in the sandbox's (otherwise empty) environment.
SANDBOX_SIDE = ROOT / "activities" / "sandbox" / "client"


def test_environment_is_read_only_in_settings() -> None:
    for package in LAYERS:
        for path in _modules(package):
            text = path.read_text(encoding="utf-8")
            if path.is_relative_to(SANDBOX_SIDE):
                continue
            if "os.environ" in text or "getenv(" in text:
                assert path == ROOT / "workers" / "settings.py", (
                    f"{path.relative_to(ROOT)} reads the environment; use workers.settings"
                )


def test_the_lazy_alias_is_one_import_inside_its_function() -> None:
    # What test_layers_only_import_downwards lets through is exactly one import statement, of
    # exactly one module, inside the alias function: not a module-level import, not a second one.
    tree = _parse(ROOT / LAZY_ALIAS[0])
    assert len(_alias_imports(tree)) == 1, f"{LAZY_ALIAS[0]}: the alias's import moved or went"


def test_time_arithmetic_modules_never_read_the_clock() -> None:
    for rel in TIME_ARITHMETIC:
        text = (ROOT / rel).read_text(encoding="utf-8")
        assert not _CLOCK_CALLS.search(text), f"{rel} reads the clock; take `now` as a parameter"


# A reader finds a module by its package's name: a package holds its concerns in subpackages
# (activities/harness, activities/store, workers/services, workers/process, ...), and only a
# few modules stand loose beside them.
LOOSE_MAX = {"activities": 8, "workers": 8}


@pytest.mark.parametrize("package", sorted(LOOSE_MAX))
def test_packages_keep_few_loose_modules(package: str) -> None:
    loose = sorted(p.name for p in (ROOT / package).glob("*.py") if p.name != "__init__.py")
    assert len(loose) <= LOOSE_MAX[package], (
        f"{package}/ holds {len(loose)} loose modules ({', '.join(loose)}): group them into "
        "packages named after what they do"
    )
