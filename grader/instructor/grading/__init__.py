"""Grading a folder of learner notebooks: find -> restore -> execute -> recompute -> write.

``pipeline`` runs the steps; ``containment`` and ``workers`` execute each notebook contained (a cold
process or a warm forked worker); ``verify`` recomputes every verdict by live torch from the store read
as data; ``learner_function`` re-runs an exercise's recovered source in a process that holds no truth;
``gradebook``, ``scores``, ``report`` write what the instructor reads; ``roster``, ``copies``, ``shards``
and ``notebook_worker`` are the parts those steps share."""
