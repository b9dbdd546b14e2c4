"""Unit tests: one module of shared/ at a time, with real dependencies (local servers, no mocks)."""
