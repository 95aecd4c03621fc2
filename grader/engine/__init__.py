"""The engine: what a question is and how a verdict is reached.

``course`` (the units), ``question`` (declarations and the registry), ``claims`` (the rules the prose
states, each checked on generated programs), ``kinds`` (answers: read, compare,
show), ``cases`` (the protocol of an exercise's generated cases), ``results`` (what a learner is told),
``store`` (the append-only progress log), ``progress`` (a unit's status derived from that log),
``exercises`` (a learner's function run on every case), ``limits`` (the in-process time limit and output
cap) and ``torch_state`` (torch's global state: the clean room every experiment runs in). The engine
imports neither the content, nor the learner's interface, nor the instructor's tools.
"""
