"""What the tests, the bench and the stress runs share: tiny generated GGUF models, a
scripted engine, a scripted OpenAI-compatible server, a stand-in for the Hugging Face
hub to download models from, a home in HA's shapes and a fault-injecting proxy.

`tests/` imports from here; nothing in `scripts/` imports `tests/`.
"""
