"""A user's small projects workspace (seed 003, project contexts): the rules over the repository
(``service.py``) and the ``entityId`` scoping of ``project``/``task`` contexts (``scope.py``)."""
