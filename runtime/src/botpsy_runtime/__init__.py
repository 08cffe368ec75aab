"""BotPsy's model runtime: engines, the model worker, grammars and call formats, GGUF, download.

Nothing here imports Home Assistant: the BotPsy integration (custom_components/botpsy)
requires this package and keeps what is about the home. This `__init__` imports nothing,
so the worker (`python -I -m botpsy_runtime.worker`) starts with only what it needs.
"""
