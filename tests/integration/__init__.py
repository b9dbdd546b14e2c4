"""Integration tests: real SDKs against emulators and local fake servers."""
