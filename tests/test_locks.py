"""A prediction locked with the widget is carried by the notebook, and batch grading grades it.

The predict cell shows a record output (grader.engine.locked) that "Lock in" updates; grading writes the
recorded answer into the cell's ``answer = ...`` before the re-run (grader.instructor.grading.locks).
A lock made after torch's answer was revealed is kept as such and is never carried as a prediction.
Re-running a predict cell never changes the record and shows the question as it stands.
"""

import copy
import csv
import json
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("ipywidgets")

from grader import predict, reset, reveal
from grader.engine import locked
from grader.engine.store import current
from grader.instructor.grading.locks import apply_locks, with_answer
from grader.learner import record, widgets
from tests.cli import run as cli
from tests.truths import asked_now

ROOT = Path(__file__).resolve().parent.parent
UNTOUCHED = ROOT / "notebooks" / "00_start_here.ipynb"
ADD, FLAG = "c006", "c011"  # unit 00's predict cells: 00.warmup-add and 00.warmup-flag


def events(unit):
    return [(e.qid, e.action, e.verdict, e.answer) for e in current().events(unit)]


class Handle:
    """What IPython.display.display returns for a display_id: update() replaces the output's data."""

    def __init__(self, data, display_id):
        self.data, self.display_id = data, display_id

    def update(self, data, raw=False):
        assert raw
        self.data = data


@pytest.fixture
def shown(monkeypatch):
    """A kernel, as far as the widgets can tell; every display the record makes, in order."""
    displays = []

    def display(data, raw=False, display_id=None):
        assert raw and display_id
        displays.append(Handle(data, display_id))
        return displays[-1]

    monkeypatch.setattr("IPython.display.display", display)
    monkeypatch.setattr(widgets, "widgets_available", lambda: True)
    monkeypatch.setattr(record, "widgets_available", lambda: True)
    monkeypatch.setattr(widgets, "_LIVE", {})  # no widget of an earlier test is on this kernel's screen
    return displays


def as_saved(data) -> dict:
    """The output as JupyterLab saves it in the notebook."""
    return {"output_type": "display_data", "data": json.loads(json.dumps(data)), "metadata": {}}


# --- the record the predict cell carries ----------------------------------------------------------


def test_lock_in_updates_the_record_the_cell_carries(shown):
    asked = predict("01.x-is-leaf", ...)
    assert isinstance(asked, widgets.Asked) and len(shown) == 1
    record = shown[0]
    assert record.data["text/plain"] == "01.x-is-leaf: not locked yet"
    assert locked.read(as_saved(record.data)) is None
    asked.widget.input.box.value = False
    assert asked.widget.lock().verdict == "recorded"
    assert record.data[locked.MIME] == {"qid": "01.x-is-leaf", "locked": True, "answer": False, "before_reveal": True}
    assert record.data["text/plain"] == "01.x-is-leaf: locked in: False"
    assert locked.read(as_saved(record.data)) == ("01.x-is-leaf", False)
    asked.widget.input.box.value = True  # replaced before the reveal: the record follows
    asked.widget.lock()
    assert locked.read(as_saved(record.data)) == ("01.x-is-leaf", True)


def test_a_lock_after_the_reveal_is_recorded_as_such_and_never_read_as_a_prediction(shown):
    reveal("01.x-is-leaf")
    reset("01.x-is-leaf")
    asked = predict("01.x-is-leaf", ...)
    asked.widget.input.box.value = False
    assert asked.widget.lock().verdict == "recorded"
    payload = shown[-1].data[locked.MIME]
    assert payload["locked"] and payload["before_reveal"] is False and payload["answer"] is False
    assert "after torch's answer was revealed" in shown[-1].data["text/plain"]
    with pytest.raises(locked.Unusable, match="after torch's answer was revealed"):
        locked.read(as_saved(shown[-1].data))
    assert locked.read_lock(as_saved(shown[-1].data)) == ("01.x-is-leaf", False, False)  # what grading replays


def test_a_reset_from_the_widget_leaves_the_record_unlocked(shown):
    asked = predict("01.pow-node", ...)
    asked.widget.input.box.value = "PowBackward0"
    asked.widget.lock()
    assert locked.read(as_saved(shown[0].data)) == ("01.pow-node", "PowBackward0")
    asked.widget.start_again()
    assert locked.read(as_saved(shown[0].data)) is None


@pytest.mark.parametrize(
    "payload, words",
    [
        ("not an object", "not an object"),
        ({"locked": True, "answer": 1, "before_reveal": True}, "names no question"),
        ({"qid": "../etc", "locked": True, "answer": 1, "before_reveal": True}, "names no question"),
        ({"qid": "01.x-is-leaf", "locked": True, "before_reveal": True}, "malformed"),
        ({"qid": "01.x-is-leaf", "locked": "yes", "answer": 1, "before_reveal": True}, "malformed"),
        ({"qid": "01.x-is-leaf", "locked": True, "answer": 1, "before_reveal": 1}, "malformed"),
        ({"qid": "01.x-is-leaf", "locked": True, "answer": float("nan"), "before_reveal": True}, "not finite"),
        ({"qid": "01.x-is-leaf", "locked": True, "answer": ["x"] * 5000, "before_reveal": True}, "too large"),
        ({"qid": "01.x-is-leaf", "locked": True, "answer": [[[[[[[[1]]]]]]]], "before_reveal": True}, "too deep"),
    ],
)
def test_a_malformed_record_is_unusable(payload, words):
    with pytest.raises(locked.Unusable, match=words):
        locked.read({"output_type": "display_data", "data": {locked.MIME: payload}})


def test_outputs_without_a_record_read_as_none():
    for output in ({"output_type": "stream", "text": "x"}, {"data": {"text/plain": "x"}}, "x", None):
        assert locked.read(output) is None


# --- re-running a predict cell (issue 27, item 2) --------------------------------------------------


def test_rerunning_an_answered_predict_cell_after_the_reveal_shows_the_record_and_records_nothing(shown, monkeypatch):
    asked = predict("01.x-is-leaf", ...)
    asked.widget.input.box.value = False
    asked.widget.lock()
    assert reveal("01.x-is-leaf").verdict == "correct"
    before = events("01")
    monkeypatch.setenv("AUTOGRAD_LAB_STRICT", "1")  # what a Run All meets: never a refusal, never raises
    for again in (predict("01.x-is-leaf", ...), predict("01.x-is-leaf")):
        assert again.verdict == "info" and again.actions == []
        rows = dict(again.rows)
        assert rows["your prediction"] == "False" and rows["torch says"] == "False"
        assert "predicted, correct" in again.message and "reset(" not in again.message
        assert "Start" not in json.dumps(again._repr_mimebundle_().get("text/plain", ""))
        assert locked.read(as_saved(shown[-1].data)) == ("01.x-is-leaf", False)  # the re-run carries it again
    assert events("01") == before
    monkeypatch.delenv("AUTOGRAD_LAB_STRICT")
    refused = predict("01.x-is-leaf", True)  # a real answer after the reveal is still refused
    assert refused.verdict == "locked" and events("01") == before


def test_rerunning_before_the_reveal_shows_the_locked_prediction_in_the_input(shown):
    asked = predict("01.pow-node", ...)
    asked.widget.input.box.value = "PowBackward0"
    asked.widget.lock()
    before = events("01")
    again = predict("01.pow-node", ...)
    assert isinstance(again, widgets.Asked) and again.widget.input.value() == "PowBackward0"
    assert not again.widget.button.disabled  # it may still be changed
    assert locked.read(as_saved(shown[-1].data)) == ("01.pow-node", "PowBackward0")
    assert events("01") == before


def test_rerunning_after_a_reveal_without_prediction_says_so_without_a_button(shown):
    reveal("01.x-is-leaf")
    again = predict("01.x-is-leaf", ...)
    assert again.verdict == "info" and again.actions == [] and "revealed without prediction" in again.message
    assert "reset('01.x-is-leaf')" in again.message and "your prediction" not in dict(again.rows)
    assert locked.read(as_saved(shown[-1].data)) is None
    assert [e[1] for e in events("01")] == ["reveal"]


# --- a reset closes the inputs of what it reset (issue 27) ------------------------------------------


def test_a_reset_in_code_closes_the_widget_on_screen_and_unlocks_its_record(shown):
    asked = predict("01.pow-node", ...)
    asked.widget.input.box.value = "PowBackward0"
    asked.widget.lock()
    done = reset("01.pow-node")
    assert "run its predict cell, predict('01.pow-node', ...), again" in done.message  # the next step
    w = asked.widget
    assert w.button.disabled and w.input.box.disabled  # it cannot take a prediction it would not show
    assert "was reset" in w.message.value and "Run this cell again" in w.message.value
    assert locked.read(as_saved(shown[0].data)) is None  # the saved cell no longer carries the reset lock
    fresh = predict("01.pow-node", ...)
    assert not fresh.widget.button.disabled
    other = predict("01.x-is-leaf", ...)
    assert "unit 01 starts again from nothing: run its cells again" in reset("01").message
    assert fresh.widget.button.disabled and other.widget.button.disabled  # a unit reset closes all of its inputs


# --- a self-test answered with its Check button (issue 27) ---------------------------------------------

SQUARE = "c015"  # unit 00's self-test cell: answer = ... then check("00.warmup-square", answer)


def _checked_with_the_widget(text: str) -> dict:
    """check("00.warmup-square", ...) as the cell runs it, ``text`` typed and Check pressed; the record's data."""
    from grader import check

    asked = check("00.warmup-square", ...)
    assert isinstance(asked, widgets.Asked)
    asked.widget.input.box.value = text
    asked.widget.lock()
    return asked


def test_a_self_test_checked_with_the_widget_is_carried_by_its_cell(shown):
    from grader import check
    from grader.engine.question import get

    first = asked_now(get("00.warmup-square"))  # on this learner's own program
    asked = _checked_with_the_widget(f"{first + 1:g}")
    assert shown[0].data["text/plain"].startswith("00.warmup-square: checked with the widget")
    assert locked.read(as_saved(shown[0].data)) == ("00.warmup-square", first + 1)  # a wrong answer is carried too
    truth = asked_now(get("00.warmup-square"))  # the program that followed the wrong answer
    asked.widget.input.box.value = f"{truth:g}"
    assert asked.widget.lock().verdict == "correct"
    assert locked.read(as_saved(shown[0].data)) == ("00.warmup-square", truth)
    before = events("00")
    again = check("00.warmup-square", ...)  # Run All after passing: the cell carries the passing answer again
    assert again.widget.button.disabled and events("00") == before
    assert locked.read(as_saved(shown[-1].data)) == ("00.warmup-square", truth)
    template = nbformat.read(UNTOUCHED, as_version=4).cells
    nb = nbformat.read(UNTOUCHED, as_version=4)
    cell = next(c for c in nb.cells if c.get("id") == SQUARE)
    cell.outputs = [nbformat.from_dict(as_saved(shown[-1].data))]
    assert apply_locks(nb.cells, template) == []
    assert cell.source.splitlines()[0] == f"answer = {truth!r}  # locked in with the widget"
    reset("00.warmup-square")
    assert locked.read(as_saved(shown[-1].data)) is None


# --- grading reads the record ------------------------------------------------------------------------


def with_records(records: dict) -> nbformat.NotebookNode:
    """Unit 00's learner notebook as JupyterLab saves it after the widget locked ``records``:
    {cell id: (qid, encoded answer, before_reveal)}."""
    nb = nbformat.read(UNTOUCHED, as_version=4)
    for cell in nb.cells:
        if cell.get("id") in records:
            qid, answer, before = records[cell["id"]]
            data = locked.bundle(locked.record(qid, answer, before), json.dumps(answer))
            cell.outputs = [nbformat.from_dict(as_saved(data))]
            cell.execution_count = 1
    return nb


def test_apply_locks_writes_the_locked_answer_into_the_placeholder():
    template = nbformat.read(UNTOUCHED, as_version=4).cells
    nb = with_records({ADD: ("00.warmup-add", [2.0, 3.0], True), FLAG: ("00.warmup-flag", False, True)})
    assert apply_locks(nb.cells, copy.deepcopy(template)) == []
    sources = {c.get("id"): c.source for c in nb.cells}
    assert sources[ADD].splitlines()[0] == "answer = [2.0, 3.0]  # locked in with the widget"
    assert sources[ADD].splitlines()[1] == 'predict("00.warmup-add", answer)'
    assert sources[FLAG].startswith("answer = False")


def test_apply_locks_ignores_and_notes_what_it_cannot_carry():
    template = nbformat.read(UNTOUCHED, as_version=4).cells
    nb = with_records(
        {
            ADD: ("00.warmup-flag", False, True),  # a record of another question than the cell's own
            SQUARE: ("00.warmup-square", 4.0, False),  # "after a reveal" in a self-test, which has none
            "c008": ("00.warmup-add", [2.0, 3.0], True),  # in a cell that predicts nothing
        }
    )
    untouched = {c.get("id"): c.source for c in nb.cells}
    notes = apply_locks(nb.cells, template)
    assert {c.get("id"): c.source for c in nb.cells} == untouched
    assert len(notes) == 3
    assert any("00.warmup-flag in the cell of 00.warmup-add was ignored" in n for n in notes)
    assert any("locked after a reveal, but it is no prediction" in n for n in notes)
    assert any("a cell that predicts nothing" in n for n in notes)


def test_apply_locks_replays_a_lock_after_the_reveal_as_one():
    """A prediction locked after the reveal is carried with the reveal and reset before it, so the re-run's
    record is the panel's ("predicted after reveal"), never a prediction before the reveal."""
    template = nbformat.read(UNTOUCHED, as_version=4).cells
    nb = with_records({ADD: ("00.warmup-add", [2.0, 3.0], False), FLAG: ("00.warmup-flag", False, False)})
    typed = next(c for c in nb.cells if c.get("id") == FLAG)
    typed.source = 'answer = True\npredict("00.warmup-flag", answer)'  # typed in code after the reveal
    assert apply_locks(nb.cells, copy.deepcopy(template)) == []
    sources = {c.get("id"): c.source.splitlines() for c in nb.cells}
    replay = "_agl.reveal('00.warmup-add'); _agl.reset('00.warmup-add')"
    assert sources[ADD][0].startswith("import grader as _agl  # replayed") and sources[ADD][1] == replay
    assert sources[ADD][2:] == ["answer = [2.0, 3.0]  # locked in with the widget", 'predict("00.warmup-add", answer)']
    assert sources[FLAG][1] == replay.replace("add", "flag") and sources[FLAG][2] == "answer = True"


def test_an_answer_typed_in_the_cell_wins_over_a_record():
    assert with_answer('answer = True\npredict("01.x-is-leaf", answer)', False) is None
    assert with_answer('x = 1; answer = ...  # YOUR ANSWER HERE\npredict("q", answer)', "é") == (
        "x = 1; answer = 'é'  # locked in with the widget\npredict(\"q\", answer)"
    )


def _checked_record(text: str) -> dict:
    """The record data a self-test cell's output holds after its Check button graded ``text`` (in this process)."""
    from unittest import mock

    displays = []

    def display(data, raw=False, display_id=None):
        displays.append(Handle(data, display_id))
        return displays[-1]

    with (
        mock.patch("IPython.display.display", display),
        mock.patch.object(widgets, "widgets_available", lambda: True),
        mock.patch.object(record, "widgets_available", lambda: True),
    ):
        _checked_with_the_widget(text)
    return displays[-1].data


def test_grading_grades_the_predictions_locked_with_the_widget(tmp_path, monkeypatch):
    """The same gradebook run as tests/test_grade.py, on learner copies whose predictions were locked with
    the widget: a true lock grades "predicted, correct"; a forged one and a lock after the reveal earn nothing; a
    self-test answered only with its Check button grades "correct"."""
    from grader.engine.question import get

    add, flag = (get(q).kind.encode(get(q).run()) for q in ("00.warmup-add", "00.warmup-flag"))  # torch's answers
    folder = tmp_path / "class"
    checked = with_records({})  # a self-test answered with its Check button, as the widget wrote the record
    monkeypatch.setenv("AUTOGRAD_LAB_LEARNER", "checked")  # answered as the learner graded below, on their program
    square = asked_now(get("00.warmup-square"))
    shown_data = _checked_record(f"{square:g}")
    next(c for c in checked.cells if c.get("id") == SQUARE).outputs = [nbformat.from_dict(as_saved(shown_data))]
    learners = {
        "checked": checked,
        "lock": with_records({ADD: ("00.warmup-add", add, True), FLAG: ("00.warmup-flag", flag, True)}),
        "forge": with_records({ADD: ("00.warmup-flag", flag, True)}),
    }
    for name, nb in learners.items():
        (folder / name).mkdir(parents=True)
        nbformat.write(nb, folder / name / "00_start_here.ipynb")
    out = folder / "grades.csv"
    done = cli("grade", folder, "--out", out, "-j", "2", "--cell-timeout", "60")
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out, newline="") as f:
        rows = {r["learner"]: r for r in csv.DictReader(f)}
    assert rows["lock"]["run"] == "ok", rows["lock"]
    assert rows["lock"]["00.warmup-add"] == "predicted, correct"
    assert rows["lock"]["00.warmup-flag"] == "predicted, correct"
    assert rows["lock"]["00.warmup-square"] == "not answered"
    assert rows["checked"]["run"] == "ok" and rows["checked"]["00.warmup-square"] == "correct (variant 1)", rows[
        "checked"
    ]
    assert rows["forge"]["00.warmup-add"] == "not answered", rows["forge"]
    assert rows["forge"]["points"] == "0", rows["forge"]


def test_a_prediction_after_the_reveal_reads_the_same_in_the_panel_status_and_the_gradebook(shown, home, tmp_path):
    """Issue 27: run ahead past a reveal, reset, predict again (with the widget, and typed in code), reveal: the
    panel's rows, ``python -m grader status`` and the gradebook graded from the saved notebook say the same
    ("predicted after reveal, correct"), and it earns no points."""
    from grader.engine.progress import unit_state
    from grader.engine.question import get

    truths = {q: get(q).run() for q in ("00.warmup-add", "00.warmup-flag")}
    reveal("00.warmup-add")  # Run All went past the predict cell to the reveal
    reset("00.warmup-add")
    asked = predict("00.warmup-add", ...)
    asked.widget.input.box.value = ", ".join(f"{v:g}" for v in truths["00.warmup-add"])
    assert asked.widget.lock().verdict == "recorded"
    assert reveal("00.warmup-add").verdict == "correct"
    add_record = shown[-1].data
    reveal("00.warmup-flag")
    reset("00.warmup-flag")
    assert predict("00.warmup-flag", bool(truths["00.warmup-flag"])).verdict == "recorded"  # typed in code
    flag_record = shown[-1].data
    assert flag_record[locked.MIME]["qid"] == "00.warmup-flag" and flag_record[locked.MIME]["before_reveal"] is False
    assert reveal("00.warmup-flag").verdict == "correct"
    state = unit_state("00", current().events("00"))
    panel = {qid: s.record for qid, s in state.questions.items()}  # what the panel's rows read
    assert panel["00.warmup-add"] == panel["00.warmup-flag"] == "predicted after reveal, correct"

    status = cli("status", "--json")
    assert status.returncode == 0, status.stderr[-2000:]
    (row,) = [u for u in json.loads(status.stdout)["units"] if u["unit"] == "00"]
    assert {k: row[k] for k in state.counts()} == state.counts()

    nb = nbformat.read(UNTOUCHED, as_version=4)  # the notebook as JupyterLab saves it
    for cell in nb.cells:
        if cell.get("id") == ADD:
            cell.outputs = [nbformat.from_dict(as_saved(add_record))]
        elif cell.get("id") == FLAG:
            cell.source = f'answer = {bool(truths["00.warmup-flag"])}\npredict("00.warmup-flag", answer)'
            cell.outputs = [nbformat.from_dict(as_saved(flag_record))]
    (tmp_path / "class" / "late").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "class" / "late" / "00_start_here.ipynb")
    out = tmp_path / "grades.csv"
    done = cli("grade", tmp_path / "class", "--out", out, "--cell-timeout", "60")
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out, newline="") as f:
        (graded,) = list(csv.DictReader(f))
    assert graded["run"] == "ok", graded
    assert {qid: graded[qid] for qid in panel} == panel, graded
    assert graded["done"] == str(state.counts()["done"]) and graded["points"] == "0", graded
    assert "predicted after reveal: 00.warmup-add, 00.warmup-flag" in graded["findings"], graded


# --- the record a cell's widget carries: a lock after a page reload (issue 44) -------------------------------------


def _saved_with_widget_state(asked, record_before: dict, cell_id: str) -> nbformat.NotebookNode:
    """Unit 00's learner notebook as JupyterLab saves it when the page was reloaded before the lock: the cell's output
    record still reads ``record_before`` (the reload cut it off from updates), its widget view is the widget of
    ``asked``, and the notebook's widget state is every live widget's (as ipywidgets serializes it for the page)."""
    import ipywidgets as W

    from grader.learner.display import view_of

    nb = nbformat.read(UNTOUCHED, as_version=4)
    cell = next(c for c in nb.cells if c.get("id") == cell_id)
    cell.outputs = [
        nbformat.from_dict(as_saved(record_before)),
        nbformat.from_dict({"output_type": "display_data", "data": view_of(asked.widget.box), "metadata": {}}),
    ]
    state = json.loads(json.dumps(W.Widget.get_manager_state(drop_defaults=True)))
    nb.metadata["widgets"] = {locked.WIDGET_STATE: state}
    return nb


def test_a_lock_only_the_widget_carries_is_graded_from_the_saved_widget_state(shown, tmp_path):
    """Reload, then Lock in: the output record never hears of it (its display id is gone), the widget's record line
    does; the saved notebook's widget state carries it and grading's restore writes it into the cell."""
    from grader.instructor.grading.pipeline import Submission, restore

    asked = predict("00.warmup-flag", ...)
    before = json.loads(json.dumps(shown[-1].data))  # what the cell's output says, and keeps saying after a reload
    assert before[locked.MIME]["locked"] is False
    asked.widget.input.box.value = False
    assert asked.widget.lock().verdict == "recorded"
    line = asked.widget.carried.line
    assert line.record[locked.MIME] == {"qid": "00.warmup-flag", "locked": True, "answer": False, "before_reveal": True}
    assert "00.warmup-flag: locked in" in line.value and locked.CARRIER in line._dom_classes
    nb = _saved_with_widget_state(asked, before, FLAG)
    path = tmp_path / "00_start_here.ipynb"
    nbformat.write(nb, path)
    restored = restore(Submission("x", path))
    flag = next(c for c in restored.notebook.cells if c.get("id") == FLAG)
    assert flag.source.splitlines()[0] == "answer = False  # locked in with the widget", flag.source
    assert [o.output_type for o in flag.outputs] == ["display_data", "display_data"]  # nbformat's nodes, as read
    assert not [f for f in restored.findings if "lock record" in f], restored.findings
    # without the widget state (a front end that does not save it) the output is all there is: not locked
    nb.metadata.pop("widgets")
    nbformat.write(nb, path)
    flag = next(c for c in restore(Submission("x", path)).notebook.cells if c.get("id") == FLAG)
    assert "answer = ..." in flag.source


@pytest.mark.parametrize(
    "widgets_meta",
    [
        None,
        "not a dict",
        {locked.WIDGET_STATE: {"state": {"m1": {"state": {"children": "IPY_MODEL_m1"}}}}},
        {locked.WIDGET_STATE: {"state": {"m1": {"state": {"_dom_classes": [locked.CARRIER], "record": [1, 2]}}}}},
        {locked.WIDGET_STATE: {"state": {"m1": {"state": {"children": ["IPY_MODEL_m1"], "_dom_classes": 3}}}}},
    ],
)
def test_a_widget_state_that_carries_no_usable_record_changes_nothing(widgets_meta):
    """Learner data: a widget state of any shape (a cycle, a record that is no object) is read without error and
    carries nothing into the cell."""
    output = {"output_type": "display_data", "data": {locked.WIDGET_VIEW: {"model_id": "m1"}}, "metadata": {}}
    cells = [{"cell_type": "code", "source": "", "outputs": [output]}]
    assert locked.from_widgets(cells, widgets_meta) == 0 and cells[0]["outputs"] == [output]


# --- what the saved notebook lacks, told to the learner (issue 44 item 5) -----------------------------------------


def test_mark_passed_and_the_panel_say_which_answers_the_saved_notebook_lacks(shown, tmp_path, monkeypatch):
    """The kernel's notebook (JPY_SESSION_NAME) as saved, beside the store: a lock not saved yet is named (Mark
    passed's result, the panel); saved, typed in the cell, or in a notebook that has no cell of it, it is not."""
    from grader import check, mark_passed
    from grader.engine.question import get
    from grader.learner import panels, saved

    path = tmp_path / "00_start_here.ipynb"
    nbformat.write(nbformat.read(UNTOUCHED, as_version=4), path)
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    asked = predict("00.warmup-flag", ...)
    asked.widget.input.box.value = False
    asked.widget.lock()
    assert saved.unsaved("00") == ["00.warmup-flag"]
    nb = _saved_with_widget_state(asked, shown[-1].data, FLAG)  # saved after the lock: the record says locked
    nbformat.write(nb, path)
    assert saved.unsaved("00") == []
    asked.widget.input.box.value = True  # replaced, not saved again: the file holds an earlier answer
    asked.widget.lock()
    assert saved.unsaved("00") == ["00.warmup-flag"]
    predict("00.warmup-add", [2.0, 3.0])  # typed in code: the cell of the file does not hold it either
    assert saved.unsaved("00") == ["00.warmup-add", "00.warmup-flag"]
    typed = nbformat.read(path, as_version=4)
    for cell in typed.cells:
        if cell.get("id") == ADD:
            cell.source = cell.source.replace("answer = ...", "answer = [2.0, 3.0]")
    nbformat.write(typed, path)
    assert saved.unsaved("00") == ["00.warmup-flag"]
    reveal("00.warmup-add")
    reveal("00.warmup-flag")
    asked_square = check("00.warmup-square", ...)
    asked_square.widget.input.box.value = f"{asked_now(get('00.warmup-square')):g}"
    assert asked_square.widget.lock().verdict == "correct"
    assert saved.unsaved("00") == ["00.warmup-flag", "00.warmup-square"]
    passed = mark_passed("00")
    assert (
        passed.verdict == "passed" and "does not hold your answer to 00.warmup-flag, 00.warmup-square" in passed.message
    )
    assert "Ctrl+S" in passed.message
    # what an instructor with the learner's store beside the handed-in copy can ask (a hub's homes)
    assert saved.lacking(json.loads(path.read_text()), "00", current().events("00")) == saved.unsaved("00")
    panel = panels.UnitPanel("00", interactive=False)
    assert "agl-unsaved" in panel.html() and "00.warmup-square" in panel.text()
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "scratch.ipynb"))  # another notebook: nothing to say
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "scratch.ipynb")
    assert saved.unsaved("00") == [] and "agl-unsaved" not in panel.html()
    monkeypatch.delenv("JPY_SESSION_NAME")  # no notebook named (nbval, a script): nothing to say
    assert saved.unsaved("00") == [] and "does not hold" not in mark_passed("00").message
