"""BotPsy's core: engines, model files, prompt rendering.

Nothing in this package imports Home Assistant, so it is unit-tested on its own and the
HA adapters one level up stay thin.
"""
