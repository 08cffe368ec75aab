"""The integration's and the runtime's modules import each other without a circle, and at the top.

An import inside a function is how a circle is usually dodged; one under TYPE_CHECKING
(for annotations only) runs nothing and is allowed. A submodule's import of its package
(`from . import BotPsyConfigEntry`, as HA's integrations do) is Python's own order, not
a circle of ours: the package is left out of the graph as an importer. The runtime
(botpsy_runtime) imports neither Home Assistant nor the integration.
"""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "custom_components" / "botpsy"
NAME = "custom_components.botpsy"
RUNTIME = ROOT / "runtime" / "src" / "botpsy_runtime"
PACKAGES = {NAME: PACKAGE, "botpsy_runtime": RUNTIME}


def _modules() -> dict[str, Path]:
    modules = {}
    for name, package in PACKAGES.items():
        for path in package.rglob("*.py"):
            parts = path.relative_to(package).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            modules[".".join((name, *parts))] = path
    return modules


def _imported(node: ast.Import | ast.ImportFrom, module: str, path: Path) -> list[str]:
    """The modules of this package an import statement names (relative ones resolved)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
    return [base, *(f"{base}.{a.name}" for a in node.names)]


def _imports(modules: dict[str, Path]) -> tuple[dict[str, set[str]], list[str]]:
    """Each module's top-level imports of the package's modules, and every import made
    inside a function (as "module -> imported")."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    inside: list[str] = []

    def visit(node: ast.AST, module: str, path: Path, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                for name in _imported(child, module, path):
                    if name in modules and name != module:
                        if in_function:
                            inside.append(f"{module} -> {name}")
                        elif module not in PACKAGES:
                            graph[module].add(name)
            function = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            visit(child, module, path, in_function or function)

    for module, path in modules.items():
        visit(ast.parse(path.read_text()), module, path, False)
    return graph, inside


def test_the_modules_import_each_other_without_a_circle() -> None:
    graph, _ = _imports(_modules())
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as err:
        raise AssertionError(f"import circle: {' -> '.join(err.args[1])}") from None


def test_no_module_imports_inside_a_function() -> None:
    _, inside = _imports(_modules())
    assert inside == []


def _absolute_imports(path: Path) -> list[str]:
    """The modules `path` imports by absolute name."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names.append(node.module or "")
    return names


def test_the_runtime_imports_neither_home_assistant_nor_the_integration() -> None:
    found = []
    for path in sorted(RUNTIME.rglob("*.py")):
        names = _absolute_imports(path)
        found += [f"{path.name}: {n}" for n in names if n.split(".")[0] in {"homeassistant", "custom_components"}]
    assert found == []


def test_the_check_sees_a_circle(tmp_path: Path) -> None:
    """The check itself: two modules that import each other are a circle."""
    (tmp_path / "a.py").write_text("from . import b\n")
    (tmp_path / "b.py").write_text("from .a import thing\n")
    modules = {f"{NAME}.a": tmp_path / "a.py", f"{NAME}.b": tmp_path / "b.py"}
    graph, _ = _imports(modules)
    assert graph == {f"{NAME}.a": {f"{NAME}.b"}, f"{NAME}.b": {f"{NAME}.a"}}


def _imports_of_tests(folder: Path) -> list[str]:
    """Where a file under `folder` imports the `tests` package: "path: module"."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        names = _absolute_imports(path)
        found += [f"{path.relative_to(folder)}: {n}" for n in names if n == "tests" or n.startswith("tests.")]
    return found


def test_scripts_do_not_import_the_tests() -> None:
    """The tests depend on the scripts (they test them), never the reverse: what both need
    (tiny models, the scripted engine, sample homes) lives in `scripts/testing`."""
    scripts = PACKAGE.parents[1] / "scripts"
    assert _imports_of_tests(scripts) == []
    uitest = (scripts / "uitest").read_text()
    assert "from tests" not in uitest and "import tests" not in uitest


def test_the_direction_check_sees_an_import_of_the_tests(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import os\nfrom tests.tiny import x\n")
    (tmp_path / "b.py").write_text("def f():\n    import tests.conftest\n")
    assert _imports_of_tests(tmp_path) == ["a.py: tests.tiny", "b.py: tests.conftest"]
