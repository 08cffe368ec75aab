"""BotPsy's home logic without Home Assistant imports: tools, grammars, prompts, replies.

What a request names, the tools compiled from the exposed home, their grammar, the prompt
text, policy and reply wording; unit-tested on their own, while the HA adapters one level
up stay thin. The model runtime (engines, worker, call formats, GBNF, GGUF, download) is
the `botpsy_runtime` package (runtime/ in this repository), which the integration requires.
"""
