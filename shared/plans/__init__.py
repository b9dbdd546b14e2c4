"""Plan sessions (seed 004): plan → refine → confirm → execute task by task, durably, before a deadline.

Modules: ``structured`` (one structured-output model call with one repair), ``planner`` (plan,
refine, reflect prompts and drafts), ``host`` (the ``plan`` host: each task's ReAct loop on the
kernel), ``sessions`` (the seed-004 API: ``start_planning``, ``refine_plan``, ``confirm``,
``cancel``, ``execute_plan``), ``views`` (what the API shows), ``offline`` (the labelled offline
planner of ``make dev``).
"""
