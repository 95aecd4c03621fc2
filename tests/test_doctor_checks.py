"""The doctor's extension point: a check is one ``Check`` class in ``CHECKS``, called for the events it overrides
and no others, with its state in its instance (docs/doctor.md, "Adding a check")."""

from __future__ import annotations

import torch

from grader.probes.doctor import Mechanism, doctor, observer
from grader.probes.doctor.base import EVENTS, Check, dispatch
from grader.probes.doctor.checks import CHECKS


class _Counting(Check):
    """A check written as the guide says: it counts backward calls per line and names the line of the third."""

    def __init__(self, d):
        super().__init__(d)
        self.calls: dict[str, int] = {}
        self.ends: list = []

    def on_backward_start(self, bw) -> None:
        self.calls[bw.site] = self.calls.get(bw.site, 0) + 1
        if self.calls[bw.site] == 3:
            self.d.add(("counting", bw.site), Mechanism.CARRIED_STATE, bw.site, "third backward here", "none")

    def conclude(self, exc) -> None:
        self.ends.append(exc)


def test_an_event_calls_only_the_checks_that_override_it():
    on = dispatch([_Counting.__new__(_Counting)])
    assert set(on) == set(EVENTS)
    assert {event for event, calls in on.items() if calls} == {"on_backward_start", "conclude"}


def test_every_check_of_the_doctor_overrides_some_event_and_keeps_its_place_once():
    assert len(set(CHECKS)) == len(CHECKS)
    for cls in CHECKS:
        on = dispatch([cls.__new__(cls)])
        assert any(on.values()), f"{cls.__name__} overrides no event"


def test_a_check_added_to_the_list_sees_the_run_and_reports(monkeypatch):
    monkeypatch.setattr(observer, "CHECKS", (*CHECKS, _Counting))
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with doctor(report=False) as d:
        for _ in range(4):
            opt.zero_grad()
            model(torch.ones(3, 2)).sum().backward()
            opt.step()
    mine = next(c for c in d.checks if isinstance(c, _Counting))
    assert list(mine.calls.values()) == [4] and mine.ends == [None]
    assert [f.evidence for f in d.findings] == ["third backward here"]
    assert d.internal_errors == 0
    assert not hasattr(d, "calls")  # its state is its own, not the observer's


def test_every_mechanism_has_its_row_in_the_doctors_table():
    """docs/doctor.md's table says what each mechanism measures: a new one without a row is found here (the
    new-contributor trial of issue 48 added one and nothing said the table lacked it)."""
    from pathlib import Path

    from grader.probes.doctor.findings import Mechanism

    text = (Path(__file__).resolve().parent.parent / "docs" / "doctor.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| ") and line.count("|") >= 4}
    assert {m.value for m in Mechanism} <= rows, {m.value for m in Mechanism} - rows
