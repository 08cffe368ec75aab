"""The integration's call grammars (see scripts/testing/call_grammars.py), read from files.

`call_grammar("qwen_xml", "one_call")`: the sample home's tools in that format; variants
`answer` (text or calls), `calls` (calls only), `one_call` and `text` (no tools).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

FOLDER = Path(__file__).parent / "grammars"


@cache
def call_grammar(fmt: str, variant: str) -> str:
    return (FOLDER / f"{fmt}-{variant}.gbnf").read_text()
