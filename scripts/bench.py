"""BotPsy's benchmark: end to end through a real Home Assistant, beside the engine's floor.

Run by scripts/bench (arguments: --help); the code is the scripts/benchmark package.
"""

from __future__ import annotations

from pathlib import Path
import sys

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.benchmark.__main__ import main

if __name__ == "__main__":
    main()
