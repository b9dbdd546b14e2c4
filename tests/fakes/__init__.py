"""Local fakes of external services that the real SDKs talk to over HTTP."""
