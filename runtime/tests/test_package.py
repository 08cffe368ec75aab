"""The package on its own: importable without Home Assistant, the worker where the engine starts it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from botpsy_runtime import embedded, worker


def test_the_engine_starts_this_packages_worker() -> None:
    """`python -I -m <WORKER_MODULE>`: the module the interpreter finds is worker.py here."""
    spec = importlib.util.find_spec(embedded.WORKER_MODULE)
    assert spec is not None and spec.origin == worker.__file__


def test_every_module_loads_without_home_assistant() -> None:
    """In an isolated interpreter (as the worker runs), every module imports, and neither
    Home Assistant nor the integration is among what they loaded."""
    code = (
        "import importlib, pkgutil, sys, botpsy_runtime\n"
        "for m in pkgutil.iter_modules(botpsy_runtime.__path__):\n"
        "    importlib.import_module('botpsy_runtime.' + m.name)\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'homeassistant', 'custom_components'}))\n"
    )
    result = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
