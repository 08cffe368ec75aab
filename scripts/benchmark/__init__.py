"""scripts/bench: BotPsy's latency through a real Home Assistant, beside the engine's floor.

`scripts/bench --help` (python -m scripts.benchmark) runs it; bench.md defines every figure.
"""
