"""scripts/bench: BotPsy's latency through a real Home Assistant, beside the engine's floor.

`python scripts/bench.py --help` (or scripts/bench) runs it; bench.md defines every figure.
"""
