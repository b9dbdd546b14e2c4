"""Scheduled runs (docs/run-control.md, "Schedules"): cron expressions and their occurrences."""
