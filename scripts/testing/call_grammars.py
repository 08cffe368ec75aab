"""The integration's call grammars, written for the runtime's tests.

The runtime's decoder, GBNF reader and remote engine are tested on the grammars the
integration really sends them: `compile_grammar` over the sample home's tools, in each
call format. The runtime cannot import the integration, so they are kept as files in
`runtime/tests/grammars/`; `tests/core/test_grammar.py` checks they are still what
`compile_grammar` writes. Run ``python -m scripts.testing.call_grammars`` after a change
to the grammar compiler or the sample home.
"""

from __future__ import annotations

from pathlib import Path

from botpsy_runtime.formats import FORMATS
from custom_components.botpsy.core.grammar import compile_grammar
from custom_components.botpsy.core.tools import compile_tools
from scripts.testing.sample_home import sample_home

FOLDER = Path(__file__).resolve().parents[2] / "runtime" / "tests" / "grammars"


def call_grammars() -> dict[str, str]:
    """File name -> grammar: per format, text or calls, calls only, one call, and text only (no tools)."""
    tools = compile_tools(sample_home())
    grammars = {}
    for name, fmt in FORMATS.items():
        grammars[f"{name}-answer.gbnf"] = compile_grammar(tools, fmt)
        grammars[f"{name}-calls.gbnf"] = compile_grammar(tools, fmt, allow_text=False)
        grammars[f"{name}-one_call.gbnf"] = compile_grammar(tools, fmt, allow_text=False, max_calls=1)
        grammars[f"{name}-text.gbnf"] = compile_grammar((), fmt)
    return grammars


def main() -> None:
    """Write the grammars into the runtime's tests."""
    FOLDER.mkdir(parents=True, exist_ok=True)
    for name, text in call_grammars().items():
        (FOLDER / name).write_text(text)
        print(FOLDER / name)


if __name__ == "__main__":
    main()
