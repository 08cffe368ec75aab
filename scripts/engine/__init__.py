"""Building and testing the embedded engine's musl binaries (scripts/build-engine, scripts/test-engine)."""
