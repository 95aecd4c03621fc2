"""The learner's interface: the notebook API (``api``), the widgets that write to the same record
(``widgets``), and the tools that show torch's graph (``drawing``, ``stepper``, ``labs``); ``workspace``
makes the learner's own copy of the notebooks."""
