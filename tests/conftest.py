"""Fixtures shared by the core and the integration tests: tiny models and a real server."""

pytest_plugins = ["scripts.testing.model_fixtures"]
