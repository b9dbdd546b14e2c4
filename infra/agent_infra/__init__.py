"""The Agent Runtime's infrastructure, declared with Pulumi (one stack per environment)."""
