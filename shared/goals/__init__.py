"""The goal-planning agent behind ``POST /agent/run`` (seed 000): CheckApproval -> Plan -> Finalize.

Stateless: it reads the session state the backend sends and returns the next one; it never
writes to a database. Modules: ``contracts`` (wire models, ``GoalPreview``), ``consent``,
``drafts`` (model answers), ``checks`` (calendar, duplicates), ``planner``, ``workflow``,
``offline`` (the dev planner without Gemini), ``service`` (what the entry point calls).
"""
