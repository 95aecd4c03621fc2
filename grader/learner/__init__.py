"""The learner's interface: the notebook API (``api``), the prediction inputs that write to the same record
(``widgets``), the unit panel and course map (``panels``), and the tools that show torch's graph
(``drawing``, ``stepper``, ``labs``); ``display`` is what they share, ``workspace`` makes the learner's own
copy of the notebooks."""
