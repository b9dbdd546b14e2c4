"""The sandbox service: workspaces in which model-chosen scripts run isolated (docs/workspaces.md).

It is its own process (its own Cloud Run service in production), never imported by the functions:
they reach it over HTTP through ``shared/connectors/sandbox.py``. Modules:

- ``limits``: the limits of one script and one workspace, from the environment;
- ``mounts``: the service's private mount namespace and one size-capped tmpfs per workspace;
- ``jail``: one script under bubblewrap (every namespace unshared, read-only system, rlimits,
  capped output, wall time);
- ``files``: workspace-relative paths (no ``..``, no absolute paths, no symlink escapes), reads;
- ``snapshots``: a workspace as a tar archive in object storage (a local directory or Cloud Storage);
- ``gitops``: clone and push outside the jail, the token passed only to git's own process;
- ``workspaces``: the workspaces of this process (create, restore when missing, exec, destroy);
- ``server``: the HTTP API with its key.
"""
