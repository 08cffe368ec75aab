"""What every stress section is given."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class StressOptions:
    """The model both engines serve, where sections write, and their sizes."""

    model: Path | None  # the instruct GGUF (embedded engine, llama-server); None: replayed sections only
    out: Path  # out/stress: each section may keep logs under out/<section>/
    threads: int
    llama_server: str  # path of the llama-server binary
    fuzz_outputs: int  # fuzzed model outputs, over all call formats
    seed: int
