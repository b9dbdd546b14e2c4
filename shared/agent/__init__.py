"""The chat run (seed 001): how runs start, their host, approvals, streams and replays."""
