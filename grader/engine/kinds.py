"""Answer kinds: what an answer looks like, how it is read, and when it agrees with torch.

Every kind does four things:

* ``read(answer)`` turns what a learner typed into a normal form, or raises
  :class:`Unanswered` (a placeholder such as ``...``) or :class:`BadAnswer`
  (a message in the learner's terms: what was expected, what came);
* ``agrees(truth, value)`` says whether a read answer matches torch's live one;
* ``show(value)`` writes a value for people;
* ``wrong_answers(truth)`` derives answers that must be refused, for the
  no-false-pass tests.

A slip (an answer that differs from a valid one only in case, or a set typed as a string) is a
:class:`Slip`: a ``BadAnswer`` that carries the answer meant, so the learner is asked "did you mean
...?" before anything is recorded. ``read_recorded`` reads an answer already on the record (a store
written by an older version, a notebook handed out earlier): it never refuses a slip there, and
:class:`Error` reads 0.2.0's ``(place, words)`` form there (see :meth:`Error.read_recorded`).

Names that torch may rename between releases (node classes, ``_saved_*``
attributes, error wording) are compared on their stable part only.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Sequence as Seq
from typing import Any, NamedTuple

from grader.engine import pace, torch_state


class Unanswered(Exception):
    """The answer is still the notebook's placeholder."""


class BadAnswer(Exception):
    """The answer cannot be read as this kind; the text says why, for the learner."""


class Slip(BadAnswer):
    """A slip of writing, caught before it is recorded: ``meant`` is the answer the learner most likely
    meant (in the form the kind reads); ``given`` is the answer read as typed, or None where it cannot
    be read at all (a set typed as a string). Front ends read ``meant``, never the message's text."""

    def __init__(self, message: str, meant: Any, given: Any = None):
        super().__init__(message)
        self.meant, self.given = meant, given


_NODE_CLASSES: list[frozenset[str]] = []


def node_class_names() -> frozenset[str]:
    """The class names of torch's autograd nodes, asked of this torch (``torch._C._functions``)."""
    if not _NODE_CLASSES:
        try:
            import torch

            found = frozenset(n for n in dir(torch._C._functions) if "Backward" in n or n == "AccumulateGrad")
        except Exception:  # a torch without the module: no slip is caught, nothing is refused
            found = frozenset()
        _NODE_CLASSES.append(found)
    return _NODE_CLASSES[0]


def case_slip(name: str, valid: Iterable[str]) -> str | None:
    """The one valid name that ``name`` differs from only in case, or None (also when ``name`` is valid)."""
    valid = set(valid)
    if name in valid:
        return None
    matches = sorted(v for v in valid if v.lower() == name.lower())
    return matches[0] if len(matches) == 1 else None


def set_in_a_string(text: str) -> list[str] | None:
    """The names of a set or list typed inside one string, such as '{x, W, b}'; None if it is not one."""
    inner = text.strip()
    braced = len(inner) >= 2 and inner[0] + inner[-1] in ("{}", "[]", "()")
    if braced:
        inner = inner[1:-1]
    if not braced and "," not in inner:
        return None
    parts = [p.strip().strip("'\"").strip() for p in inner.split(",")]
    parts = [p for p in parts if p]
    return parts if parts and all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", p) for p in parts) else None


def is_placeholder(answer: Any) -> bool:
    return answer is Ellipsis or answer is None


def type_words(value: Any) -> str:
    """A short, learner-facing name for what was given."""
    if isinstance(value, bool):
        return f"the boolean {value}"
    if isinstance(value, str):
        return f"the string {short(value)}"
    if isinstance(value, type):
        return f"the class {value.__name__} (not an instance of it)"
    if _is_tensor(value):
        return f"a tensor of shape {tuple(value.shape)}"
    if hasattr(value, "__next__"):
        return "a generator or iterator"
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def short(value: Any, limit: int = 80) -> str:
    """repr() that never raises and never runs long."""
    try:
        text = repr(value)
    except Exception as exc:  # a learner object with a broken __repr__
        text = f"<{type(value).__name__} whose repr raised {type(exc).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_tensor(value: Any) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "shape") and hasattr(value, "requires_grad")


MAX_ITEMS = 10_000  # longer answers are refused before they are read or stored
MAX_CHARS = 10_000


def reject_common(value: Any, wanted: str) -> None:
    if is_placeholder(value):
        raise Unanswered()
    if isinstance(value, str) and len(value) > MAX_CHARS:
        raise BadAnswer(f"expected {wanted}, got a string of {len(value):,} characters; that is too long to be it")
    if isinstance(value, (list, tuple, set, frozenset, dict)) and len(value) > MAX_ITEMS:
        raise BadAnswer(f"expected {wanted}, got a collection of {len(value):,} items; that is too many to be it")
    if _is_tensor(value):
        raise BadAnswer(f"expected {wanted}, got {type_words(value)}; read the value out with .item() or .tolist()")
    if isinstance(value, type):
        raise BadAnswer(f"expected {wanted}, got {type_words(value)}")
    if hasattr(value, "__next__") or type(value).__name__ in ("generator", "map", "filter", "zip"):
        raise BadAnswer(
            f"expected {wanted}, got {type_words(value)}; wrap it in list(...) so it can be read more than once"
        )


MAX_DEPTH = 20


def _grader_made(cls: type) -> bool:
    """A class defined at the top level of a grader module (a learner's class cannot pass for one)."""
    import sys

    module = getattr(cls, "__module__", "") or ""
    return (
        module.split(".")[0] == "grader"
        and getattr(sys.modules.get(module), getattr(cls, "__qualname__", ""), None) is cls
    )


def plain_copy(value: Any, _depth: int = 0) -> Any:
    """A plain copy of an answer, made in one pass: what every kind then reads.

    Containers are walked once with the base type's own iteration (a subclass's ``__len__``,
    ``__iter__`` or ``__eq__`` never runs, so neither a lying length nor an iterator that yields
    differently the second time changes what is graded), at most ``MAX_ITEMS + 1`` items each, so
    the size caps apply to what is really there. Strings and numbers become plain ``str``, ``int``
    and ``float``. Anything else (tensors, functions, iterators) is passed on for the kind to judge.
    """
    if _depth > MAX_DEPTH:
        raise BadAnswer(f"the answer is nested more than {MAX_DEPTH} levels deep")
    if _grader_made(type(value)):  # a case's report that the grader itself built
        return value
    if value is None or value is Ellipsis or type(value) in (bool, int, float, str):
        return value if type(value) is not str else value[: MAX_CHARS + 1]
    if isinstance(value, str):
        return str.__getitem__(value, slice(0, MAX_CHARS + 1))
    if isinstance(value, bool):
        return bool(int.__int__(value))
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    containers: tuple[tuple[type, Callable[[Any], Iterator[Any]]], ...] = (
        (list, list.__iter__),
        (tuple, tuple.__iter__),
        (set, set.__iter__),
        (frozenset, frozenset.__iter__),
    )
    for base, iterate in containers:
        if isinstance(value, base):
            items = []
            for item in iterate(value):
                items.append(plain_copy(item, _depth + 1))
                if len(items) > MAX_ITEMS:
                    break
            return base(items) if base is not list else items
    if isinstance(value, dict):
        items = []
        for key, item in dict.items(value):
            items.append((plain_copy(key, _depth + 1), plain_copy(item, _depth + 1)))
            if len(items) > MAX_ITEMS:
                break
        try:
            return dict(items)
        except TypeError:
            raise BadAnswer("the answer is a dict whose keys cannot be compared") from None
    return value


# --- name normalisers -------------------------------------------------------


def node_key(name: str) -> str:
    """The stable part of a backward node's class name: 'PowBackward0' -> 'PowBackward'.

    Drift tolerance covers the numeric suffix only (PowBackward1 still matches PowBackward0);
    'PowBackward' without its number and '::'-qualified names are not class names (see ``node_problem``).
    """
    return re.sub(r"(Backward)\d+$", r"\1", name.strip())


def node_problem(name: str) -> str:
    """Why ``name`` is not written as a node's class name (type(fn).__name__), or ''."""
    name = name.strip()
    if "::" in name:
        return (
            f"{name!r} is what .name() returns; the class name is type(fn).__name__, such as {name.split('::')[-1]!r}"
        )
    if name.endswith("Backward"):
        return f"{name!r} is missing its number: backward classes are named like {name + '0'!r}"
    return ""


def saved_key(name: str) -> str:
    """The stable part of a saved attribute's name: '_saved_self' -> 'self'."""
    name = name.strip()
    for prefix in ("_raw_saved_", "_saved_"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name.lower()


def plain_key(name: str) -> str:
    return name.strip()


def message_key(text: str) -> str:
    """Error text with case and whitespace folded, for containment tests."""
    return " ".join(str(text).lower().split())


# --- the kinds ----------------------------------------------------------------


class Kind:
    label = "answer"

    def describe(self) -> str:
        return self.label

    def read(self, answer: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def truth(self, value: Any) -> Any:
        """Normalise what an experiment returned (a grader-side value)."""
        return self.read(value)

    def agrees(self, truth: Any, value: Any) -> bool:
        return truth == value

    def show(self, value: Any) -> str:
        return short(value, 300)

    def encode(self, value: Any) -> Any:
        """A JSON-able form that ``read`` accepts back."""
        return value

    def wrong_answers(self, truth: Any) -> list:
        return []

    def verdict_note(self, truth: Any, value: Any) -> str:
        """An optional line that says where a wrong answer went wrong."""
        return ""

    def read_misconception(self, answer: Any) -> Any:
        """Read a declared wrong answer (a kind may accept a pattern that a learner may not answer)."""
        return self.read(answer)

    def read_recorded(self, answer: Any) -> Any:
        """Read an answer already on the record: as ``read``, except that a slip reads as it was typed
        (it is judged as it stands; refusing it now would lose the record, not help the learner)."""
        try:
            return self.read(answer)
        except Slip as slip:
            if slip.given is None:
                raise
            return slip.given

    def same_answer(self, wrong: Any, value: Any) -> bool:
        """Whether a read answer is the declared wrong answer ``wrong`` (for misconception notes)."""
        try:
            return bool(self.agrees(wrong, value))
        except Exception:
            return False


class Choice(Kind):
    """One of a fixed set of labels. The experiment returns the label it observed."""

    label = "one of the choices"

    def __init__(self, *options: str):
        if len(options) == 1 and not isinstance(options[0], str):
            options = tuple(options[0])
        self.options = tuple(options)

    def describe(self) -> str:
        return "one of " + ", ".join(repr(o) for o in self.options)

    def read(self, answer: Any) -> Any:
        reject_common(answer, self.describe())
        if not isinstance(answer, str):
            raise BadAnswer(f"expected {self.describe()}, got {type_words(answer)}")
        for option in self.options:
            if answer.strip().lower() == option.lower():
                return option
        raise BadAnswer(f"{short(answer)} is not a choice here; answer {self.describe()}")

    def truth(self, value: Any) -> Any:
        if value not in self.options:
            raise ValueError(f"experiment returned {value!r}, not one of {self.options}")
        return value

    def show(self, value: Any) -> str:
        return str(value)

    def wrong_answers(self, truth: Any) -> list:
        return [o for o in self.options if o != truth]


class Boolean(Kind):
    label = "True or False"

    def read(self, answer: Any) -> Any:
        reject_common(answer, "True or False")
        if isinstance(answer, bool):
            return answer
        if type(answer).__module__ == "numpy" and type(answer).__name__ in ("bool_", "bool"):
            return bool(answer)
        raise BadAnswer(f"expected True or False, got {type_words(answer)}")

    def show(self, value: Any) -> str:
        return str(value)

    def wrong_answers(self, truth: Any) -> list:
        return [not truth]


class Number(Kind):
    """A number, or a flat list of numbers, within ``tol`` (absolute) or ``rel`` (relative)."""

    def __init__(self, tol: float = 6e-5, rel: float = 0.0):
        self.tol, self.rel = float(tol), float(rel)

    @property
    def label(self) -> str:  # type: ignore[override]  # read, never written: its words depend on the tolerance
        return "a number" if not self.tol else f"a number (to within {self.tol:g})"

    def describe(self) -> str:
        return "a number, or a list of numbers" + (f", to within {self.tol:g}" if self.tol else ", exactly")

    def _one(self, x: Any, where: str = "") -> float:
        if isinstance(x, bool) or not isinstance(x, numbers.Real):
            reject_common(x, "a number")
            raise BadAnswer(f"expected a number{where}, got {type_words(x)}")
        try:
            return float(x)
        except (OverflowError, ValueError, TypeError):
            raise BadAnswer(f"{short(x, 40)}{where} cannot be read as a number (too large?)") from None

    SHAPE = "a number, or a flat list of numbers such as [2.0, 5.0]"

    def read(self, answer: Any) -> Any:
        reject_common(answer, "a number")
        if isinstance(answer, (list, tuple)):
            if not answer:
                raise BadAnswer(f"expected {self.SHAPE}, got an empty list")
            for i, x in enumerate(answer):
                if isinstance(x, (list, tuple, set, frozenset, dict)):  # a list of lists: name the shape wanted
                    raise BadAnswer(
                        f"expected {self.SHAPE}, got a list with {type_words(x)} at position {i} ({short(x, 40)}): "
                        "write every number in one list"
                    )
            return tuple(self._one(x, f" at position {i}") for i, x in enumerate(answer))
        if isinstance(answer, (set, frozenset, dict)):
            raise BadAnswer(f"expected {self.SHAPE}, got {type_words(answer)}; a list keeps its order: use [...]")
        if isinstance(answer, str) and re.search(r"[\[\](),;]|\d\s+\d", answer):  # a list written as text
            raise BadAnswer(
                f"expected {self.SHAPE}, got {type_words(answer)}, which cannot be read as one: write the numbers "
                "separated by commas, such as 2, 5 (or [2.0, 5.0] in code, without quotes)"
            )
        return self._one(answer)

    def truth(self, value: Any) -> Any:
        if _is_tensor(value):
            value = value.detach().tolist()
        return self.read(value)

    def _close(self, a: float, b: float) -> bool:
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return abs(a - b) <= self.tol + self.rel * abs(a)

    def agrees(self, truth: Any, value: Any) -> bool:
        if isinstance(truth, tuple) != isinstance(value, tuple):
            return False
        if isinstance(truth, tuple):
            return len(truth) == len(value) and all(self._close(a, b) for a, b in zip(truth, value))
        return self._close(truth, value)

    def verdict_note(self, truth: Any, value: Any) -> str:
        if isinstance(truth, tuple) and not isinstance(value, tuple):
            return f"torch's answer is a list of {len(truth)} numbers"
        if not isinstance(truth, tuple) and isinstance(value, tuple):
            return "torch's answer is a single number"
        if isinstance(truth, tuple) and len(truth) != len(value):
            return f"torch's answer has {len(truth)} numbers, yours {len(value)}"
        values = value if isinstance(value, tuple) else (value,)
        if any(math.isnan(v) or math.isinf(v) for v in values):
            return "nan and inf are never close to a finite number"
        return ""

    def show(self, value: Any) -> str:
        def one(x: float) -> str:
            if x == int(x) and abs(x) < 1e15:
                return f"{int(x):,}" if abs(x) >= 10000 else str(int(x))
            return f"{x:.4f}" if abs(x) < 1e6 else f"{x:.6g}"

        if isinstance(value, tuple):
            return "[" + ", ".join(one(x) if math.isfinite(x) else str(x) for x in value) + "]"
        return one(value) if math.isfinite(value) else str(value)

    def encode(self, value: Any) -> Any:
        return list(value) if isinstance(value, tuple) else value

    def wrong_answers(self, truth: Any) -> list:
        values = truth if isinstance(truth, tuple) else (truth,)
        if any(not math.isfinite(v) for v in values):  # a nan or inf answer: every finite number is wrong
            finite = [0.0 if not math.isfinite(v) else v for v in values]
            return [finite if isinstance(truth, tuple) else finite[0], [1.0] * len(values)]
        step = 10 * (self.tol + self.rel * (abs(truth[0]) if isinstance(truth, tuple) else abs(truth))) + 1
        if isinstance(truth, tuple):
            out: list[Any] = []
            for i in range(len(truth)):
                bumped = list(truth)
                bumped[i] += step
                out.append(bumped)
            out.append(list(truth[:-1]) or [truth[0] + step])
            out.append(truth[0] + step if len(truth) > 1 else [truth[0], truth[0]])
            return out
        out = [truth + step, truth - step, float("nan"), float("inf"), [truth]]
        if truth:
            out.append(-truth)
        return out


class Name(Kind):
    """One name, such as a node's class name, compared on its stable part (``key``)."""

    label = "a name"

    def __init__(
        self,
        key: Callable[[str], str] = node_key,
        pool: Iterable[str] = ("MulBackward0", "AddBackward0", "PowBackward0", "AccumulateGrad", "None"),
    ):
        self.key = key
        self.pool = tuple(pool)

    def describe(self) -> str:
        return "a name, as a string, such as 'MulBackward0'"

    def _read(self, answer: Any) -> Any:
        reject_common(answer, "a name (a string)")
        if not isinstance(answer, str):
            raise BadAnswer(f"expected a name as a string, got {type_words(answer)}")
        if not answer.strip():
            raise BadAnswer("the name is empty")
        if self.key is node_key and node_problem(answer):
            raise BadAnswer(node_problem(answer))
        return answer.strip()

    def read(self, answer: Any) -> Any:
        value = self._read(answer)
        meant = case_slip(value, self._valid())
        if meant is not None and self.key(meant) != self.key(value):  # a slip only where the key tells them apart
            raise Slip(f"did you mean {meant}? Names are case-sensitive: {value!r} is not one", meant, value)
        return value

    def truth(self, value: Any) -> Any:
        return self._read(value)  # torch's own name is never a slip

    def _valid(self) -> set[str]:
        return set(self.pool) | (set(node_class_names()) if self.key is node_key else set())

    def agrees(self, truth: Any, value: Any) -> bool:
        return self.key(truth) == self.key(value)

    def show(self, value: Any) -> str:
        return str(value)

    def wrong_answers(self, truth: Any) -> list:
        return [p for p in self.pool if self.key(p) != self.key(truth)][:4]


class Names(Kind):
    """A set of names; order does not matter. ``key`` folds each name to its stable part."""

    label = "a set of names"

    def __init__(self, key: Callable[[str], str] = plain_key, pool: Iterable[str] = ()):
        self.key = key
        self.pool = tuple(pool)

    def describe(self) -> str:
        return "a set of names, such as {'a', 'b'} (set() for none)"

    def read(self, answer: Any) -> Any:
        reject_common(answer, self.describe())
        if isinstance(answer, str):
            names = set_in_a_string(answer)
            if names is not None:
                text = "{" + ", ".join(repr(n) for n in names) + "}"
                raise Slip(f"that is one string, not a set of names: did you mean {text}?", frozenset(names))
            raise BadAnswer(
                f"expected a set of names, got {type_words(answer)}; write {{{answer!r}}} for a set holding one name"
            )
        if isinstance(answer, dict) or not isinstance(answer, (set, frozenset, list, tuple)):
            raise BadAnswer(f"expected {self.describe()}, got {type_words(answer)}")
        for item in answer:
            if not isinstance(item, str):
                raise BadAnswer(f"every name must be a string; {short(item)} is {type_words(item)}")
        value = frozenset(answer)
        valid = set(self.pool) | (set(node_class_names()) if self.key is node_key else set())
        fixed = {n: case_slip(n, valid) for n in value}
        fixed = {n: m if m is not None and self.key(m) != self.key(n) else None for n, m in fixed.items()}
        if any(fixed.values()):
            meant = frozenset(fixed[n] or n for n in value)
            which = ", ".join(f"{n!r} for {m!r}" for n, m in sorted(fixed.items()) if m)
            raise Slip(f"did you mean {self.show(meant)}? Names are case-sensitive ({which})", meant, value)
        return value

    def truth(self, value: Any) -> Any:
        return frozenset(value)  # torch's own names are never a slip

    def agrees(self, truth: Any, value: Any) -> bool:
        return {self.key(n) for n in truth} == {self.key(n) for n in value}

    def verdict_note(self, truth: Any, value: Any) -> str:
        t, v = {self.key(n) for n in truth}, {self.key(n) for n in value}
        parts = []
        if v - t:
            parts.append("not in torch's answer: " + ", ".join(sorted(n for n in value if self.key(n) in v - t)))
        if t - v:
            parts.append(f"{len(t - v)} name(s) missing")
        return "; ".join(parts)

    def show(self, value: Any) -> str:
        return "{" + ", ".join(repr(n) for n in sorted(value)) + "}" if value else "set() (none)"

    def encode(self, value: Any) -> Any:
        return sorted(value)

    def wrong_answers(self, truth: Any) -> list:
        out = [set(truth) - {n} for n in sorted(truth)]
        keys = {self.key(n) for n in truth}
        extra = next((p for p in self.pool if self.key(p) not in keys), "not_a_real_name")
        out.append(set(truth) | {extra})
        return out


class Sequence(Kind):
    """An ordered list of names, such as the nodes from the loss down to the leaves."""

    label = "an ordered list of names"

    def __init__(self, key: Callable[[str], str] = node_key):
        self.key = key

    def describe(self) -> str:
        return "a list of names, in order, such as ['SumBackward0', 'MulBackward0']"

    def read(self, answer: Any) -> Any:
        reject_common(answer, self.describe())
        if isinstance(answer, str):
            raise BadAnswer(
                f"expected a list of names, got {type_words(answer)}; put each name in its own string inside [...]"
            )
        if isinstance(answer, (set, frozenset)):
            raise BadAnswer("expected a list, got a set; order matters here, so use [...]")
        if not isinstance(answer, (list, tuple)):
            raise BadAnswer(f"expected {self.describe()}, got {type_words(answer)}")
        for i, item in enumerate(answer):
            if not isinstance(item, str):
                raise BadAnswer(f"every entry must be a string; entry {i + 1}, {short(item)}, is {type_words(item)}")
            if self.key is node_key and node_problem(item):
                raise BadAnswer(f"entry {i + 1}: {node_problem(item)}")
        value = tuple(answer)
        if self.key is node_key:
            fixed = [case_slip(n, node_class_names()) for n in value]
            if any(fixed):
                meant = tuple(m or n for m, n in zip(fixed, value))
                which = "; ".join(
                    f"entry {i + 1}, {n!r}: did you mean {m}?" for i, (m, n) in enumerate(zip(fixed, value)) if m
                )
                raise Slip(f"{which} Names are case-sensitive", meant, value)
        return value

    def truth(self, value: Any) -> Any:
        return tuple(value)  # torch's own names are never a slip

    def agrees(self, truth: Any, value: Any) -> bool:
        return [self.key(n) for n in truth] == [self.key(n) for n in value]

    def verdict_note(self, truth: Any, value: Any) -> str:
        t, v = [self.key(n) for n in truth], [self.key(n) for n in value]
        if len(t) != len(v):
            return f"torch's list has {len(t)} entries, yours {len(v)}"
        for i, (a, b) in enumerate(zip(t, v)):
            if a != b:
                return f"first difference at position {i}: torch has {truth[i]}, you have {value[i]}"
        return ""

    def show(self, value: Any) -> str:
        return "[" + ", ".join(value) + "]" if value else "[] (empty)"

    def encode(self, value: Any) -> Any:
        return list(value)

    def wrong_answers(self, truth: Any) -> list:
        t = list(truth)
        out = []
        if len(t) > 1:
            out += [t[:-1], t[1:]]
            if [self.key(n) for n in reversed(t)] != [self.key(n) for n in t]:
                out.append(list(reversed(t)))
            for i in range(len(t) - 1):
                if self.key(t[i]) != self.key(t[i + 1]):
                    swapped = t[:]
                    swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
                    out.append(swapped)
                    break
        out.append(t + [t[-1] if t else "MulBackward0"])
        if not t:
            out.append(["AccumulateGrad"])
        return out


class ErrorOutcome(NamedTuple):
    """What an error experiment observed: where it stopped, and what torch said."""

    where: str
    error: str = ""
    message: str = ""

    @property
    def raised(self) -> bool:
        return bool(self.error)


NO_ERROR = "no error"


def stable_part(message: str) -> str:
    """The opening of an error message, before details that vary (shapes, hints)."""
    text = " ".join(str(message).split())
    cut = len(text)
    for mark in (": ", ". ", " (", "\n"):
        i = text.find(mark)
        if 20 <= i < cut:
            cut = i
    return text[:cut].rstrip(".")


class Cause(NamedTuple):
    """A candidate mechanism for an error question: what the learner picks, and torch's mark of it.

    ``label`` is what the learner answers (case, spaces, hyphens and underscores folded), ``text``
    says the mechanism in words, and ``error`` with ``says`` is how torch reports that mechanism: its
    exception type and a stable fragment of its message. Which candidate is right is never declared:
    it is the one whose mark torch's live outcome carries (:meth:`Error.cause_of`).
    """

    label: str
    text: str
    error: str
    says: str

    def marks(self, outcome: ErrorOutcome) -> bool:
        return outcome.error == self.error and message_key(self.says) in message_key(stable_part(outcome.message))


def cause_key(text: str) -> str:
    return re.sub(r"[\s_-]+", "-", str(text).strip().lower())


class ErrorAnswer(NamedTuple):
    """A read answer to an error question: the place, the chosen cause, and a note that is never graded.

    ``legacy`` marks an answer on the record in 0.2.0's form, a place with words and no cause
    (:meth:`Error.read_recorded`); only the record can hold one, ``read`` never returns one.
    """

    where: str
    cause: str | None = None
    note: str | None = None
    legacy: bool = False


class Error(Kind):
    """Raised or not, where, and (when ``causes`` are declared) why, chosen from a short list.

    The graded part is what a machine can judge honestly: the place, exactly, and for a question with
    ``causes`` the candidate mechanism, one label from the list. torch decides which candidate is
    right: the one whose error type and message fragment its live outcome carries (exactly one must,
    or the experiment reports drift). Free words are an ungraded note, shown beside torch's message;
    they never change a verdict.

    Answers: a place such as ``"no error"``; for an error with causes ``(place, cause)`` or
    ``(place, cause, note)``; without causes ``place`` or ``(place, note)``.
    """

    label = "where it fails"

    def __init__(self, *places: str, causes: Iterable[Cause] = ()):
        self.places = (NO_ERROR,) + tuple(p for p in places if p != NO_ERROR)
        self.causes = tuple(causes)
        keys = [cause_key(c.label) for c in self.causes]
        if len(set(keys)) != len(keys) or len({(c.error, message_key(c.says)) for c in self.causes}) != len(keys):
            raise ValueError("every cause needs its own label and its own mark in torch's message")
        if self.causes and len(self.causes) < 3:
            raise ValueError("give at least three candidate causes")

    def _places_text(self) -> str:
        return ", ".join(repr(p) for p in self.places)

    def causes_text(self) -> str:
        return "; ".join(f"{c.label!r} ({c.text})" for c in self.causes)

    def describe(self) -> str:
        if self.causes:
            return (
                f"'no error', or a pair (place, cause): the place one of {self._places_text()}, the cause one of "
                f"{self.causes_text()}. Words of your own may follow as a third item: a note, never graded"
            )
        return f"one of {self._places_text()}; words of your own may follow, as (place, note): never graded"

    def _place(self, text: Any) -> str:
        if not isinstance(text, str):
            raise BadAnswer(f"the place must be a string, one of {self._places_text()}; got {type_words(text)}")
        for p in self.places:
            if text.strip().lower() == p:
                return p
        raise BadAnswer(f"{short(text)} is not a place here; use one of {self._places_text()}")

    def _cause(self, text: Any) -> str:
        if not isinstance(text, str):
            raise BadAnswer(f"the cause must be a string, one of {self.causes_text()}; got {type_words(text)}")
        for c in self.causes:
            if cause_key(text) == cause_key(c.label):
                return c.label
        raise BadAnswer(
            f"{short(text)} is not one of the causes here; choose one of {self.causes_text()} "
            "(your own words may follow as a third item, a note)"
        )

    @staticmethod
    def _note(text: Any) -> str | None:
        if is_placeholder(text):
            raise Unanswered()
        if not isinstance(text, str):
            raise BadAnswer(f"a note must be a string, got {type_words(text)}")
        return text.strip() or None

    def read(self, answer: Any, *, cause_required: bool = True) -> Any:
        reject_common(answer, self.describe())
        parts = [answer] if isinstance(answer, str) else answer
        if not isinstance(parts, (list, tuple)) or not 1 <= len(parts) <= (3 if self.causes else 2):
            raise BadAnswer(f"expected {self.describe()}, got {type_words(answer)}")
        where = self._place(parts[0])
        rest = list(parts[1:])
        for item in rest:
            if is_placeholder(item):
                raise Unanswered()
        if where == NO_ERROR:
            if any(isinstance(r, str) and r.strip() for r in rest) or any(not isinstance(r, str) for r in rest):
                raise BadAnswer("'no error' has no cause and no message; answer just 'no error'")
            return ErrorAnswer(NO_ERROR)
        if not self.causes:
            return ErrorAnswer(where, None, self._note(rest[0]) if rest else None)
        if not rest:
            if not cause_required:
                return ErrorAnswer(where)
            raise BadAnswer(
                f"name the cause too: a pair such as ({where!r}, {self.causes[0].label!r}), the cause one of "
                f"{self.causes_text()}"
            )
        return ErrorAnswer(where, self._cause(rest[0]), self._note(rest[1]) if len(rest) > 1 else None)

    def read_misconception(self, answer: Any) -> Any:
        """A declared wrong answer may name the place alone: it then matches that place with any cause."""
        return self.read(answer, cause_required=False)

    def read_recorded(self, answer: Any) -> Any:
        """An answer on the record, which may be in 0.2.0's form: a place alone, or ``(place, words)``.

        Until 0.2.0 an error question graded the place plus key words, and a locked prediction in that
        form cannot be asked again without coming after its reveal. So it is read, never refused (no
        traceback, no "invalid"): as an ``ErrorAnswer`` marked ``legacy``, its words kept as the note.
        What it earns is chosen here, once: **it is never a pass of today's question** (``agrees`` is
        False where a cause is asked; ``verdict_note`` says the cause is missing), because a machine
        cannot tell from the words which cause was meant; that is what this rework is for. What it
        earned under the question it answered is :meth:`agrees_as_answered`, the place alone, which the
        gradebook applies only to a class handed a version whose error questions took words
        (``grade --handed-out 0.2.0``, see ``grading.versions.BEFORE_CAUSES``).
        """
        try:
            return self.read(answer)
        except BadAnswer:
            parts = [answer] if isinstance(answer, str) else answer
            if not (self.causes and isinstance(parts, (list, tuple)) and 1 <= len(parts) <= 2):
                raise
            if not all(isinstance(p, str) for p in parts):
                raise
            where = self._place(parts[0])
            if where == NO_ERROR:
                raise
            words = parts[1].strip() if len(parts) == 2 else ""
            return ErrorAnswer(where, None, words or None, legacy=True)

    def agrees_as_answered(self, truth: Any, value: Any) -> bool:
        """What a legacy answer earned under the question it answered: its place, exactly (0.2.0's
        words were judged on key terms, the unsound part; they are not judged again)."""
        if getattr(value, "legacy", False):
            return value.where == truth.where
        return self.agrees(truth, value)

    def cause_of(self, outcome: ErrorOutcome) -> Cause | None:
        """The candidate that torch's live outcome carries the mark of (None where no cause is asked)."""
        if not self.causes or not outcome.raised:
            return None
        marked = [c for c in self.causes if c.marks(outcome)]
        if len(marked) != 1:
            raise ValueError(
                f"torch's {outcome.error} ({stable_part(outcome.message)!r}) carries the mark of "
                f"{len(marked)} of this question's candidate causes, not exactly one"
            )
        return marked[0]

    def truth(self, value: Any) -> Any:
        if not isinstance(value, ErrorOutcome):
            raise ValueError(f"an error experiment must return an ErrorOutcome, got {value!r}")
        self.cause_of(value)  # drift in torch's wording is reported here, before anything is graded
        return value

    def agrees(self, truth: Any, value: Any) -> bool:
        if value.where != truth.where:
            return False
        cause = self.cause_of(truth)
        return cause is None or value.cause == cause.label  # the note is never graded; a legacy answer has none

    def verdict_note(self, truth: Any, value: Any) -> str:
        if getattr(value, "legacy", False) and value.where == truth.where:
            return "the place is right; this answer was given before the question asked for the cause, so it needs one"
        cause = self.cause_of(truth)
        if cause is not None and value.where == truth.where and value.cause != cause.label:
            return "the place is right; the cause is not the one torch's message reports"
        return ""

    def same_answer(self, wrong: Any, value: Any) -> bool:
        return wrong.where == value.where and (wrong.cause is None or wrong.cause == value.cause)

    def show(self, value: Any) -> str:
        if isinstance(value, ErrorOutcome):
            if not value.raised:
                return NO_ERROR
            message = " ".join(str(value.message).split())  # torch's whole message: its hints are part of it
            if len(message) > 1200:
                message = message[:1199] + "…"
            cause = self.cause_of(value)
            return f"{value.where}: {value.error}: {message}" + (
                f" (the cause: {cause.label!r}, {cause.text})" if cause else ""
            )
        text = value.where if value.cause is None else f"{value.where}, cause {value.cause!r}"
        if getattr(value, "legacy", False):
            text += " (given in 0.2.0's form, without a cause)"
        return text + (f" (your note, not graded: {value.note!r})" if value.note else "")

    def encode(self, value: Any) -> Any:
        if isinstance(value, ErrorOutcome):  # torch's own answer, written the way a learner would
            cause = self.cause_of(value)
            return value.where if cause is None else [value.where, cause.label]
        if value.cause is None:
            return value.where if value.note is None else [value.where, value.note]
        return [value.where, value.cause] + ([value.note] if value.note else [])

    def wrong_answers(self, truth: Any) -> list:
        cause = self.cause_of(truth)
        others = [p for p in self.places if p != truth.where]
        if not self.causes:
            return others
        out: list[Any] = [p if p == NO_ERROR else (p, (cause or self.causes[0]).label) for p in others]
        if cause is not None:
            out += [(truth.where, c.label, "a note") for c in self.causes if c != cause]
        return out


class Function(Kind):
    """A learner-written function, run on generated cases; ``returns`` reads each result.

    ``cases()`` gives the cases, smallest first, each a :class:`grader.engine.cases.Case`;
    ``call(fn, case, ns)`` calls the
    learner's function on a fresh build ``ns`` of the case (by default on
    ``ns[case.output]``); ``convert(raw, case, ns)`` turns what it returned
    into an answer ``returns`` can read (tensors into names, say).
    ``per_case_s`` and ``budget_s`` are given as on a quiet machine; read
    back, they are scaled to this machine's pace now (engine/pace.py).
    """

    label = "a function"

    def __init__(
        self,
        returns: Kind,
        cases: Callable[[], Seq],
        call: Callable | None = None,
        convert: Callable | None = None,
        per_case_s: float = 2.0,
        budget_s: float = 30.0,
    ):
        self.returns = returns
        self._make_cases = cases
        self._cases: list | None = None
        self.call = call or (lambda fn, case, ns: fn(ns[case.output]))
        self.convert = convert or (lambda raw, case, ns: raw)
        self.quiet_per_case_s = per_case_s
        self.quiet_budget_s = budget_s

    @property
    def per_case_s(self) -> float:
        """The time limit for one case on this machine now: the quiet machine's, scaled by :func:`pace.scale`."""
        return self.quiet_per_case_s * pace.scale()

    @property
    def budget_s(self) -> float:
        """The time all the cases together may take on this machine now (scaled like ``per_case_s``)."""
        return self.quiet_budget_s * pace.scale()

    def cases(self) -> list:
        """The generated cases, made once per process (they are seeded, so always the same)."""
        if self._cases is None:
            self._cases = list(self._make_cases())
        return self._cases

    def remake_cases(self) -> list:
        """The cases made afresh in a clean torch state, replacing the ones made before (which a state left
        behind in this process, by a learner's check or a test, may have bent)."""
        with torch_state.clean_room():
            self._cases = list(self._make_cases())
        return self._cases

    def describe(self) -> str:
        return "a function (pass the function itself, without calling it)"

    def read(self, answer: Any) -> Any:
        if is_placeholder(answer):
            raise Unanswered()
        if isinstance(answer, type):
            raise BadAnswer(f"expected a function, got {type_words(answer)}")
        if not callable(answer):
            hint = "; pass the function itself, not what it returned" if not isinstance(answer, str) else ""
            raise BadAnswer(f"expected a function, got {type_words(answer)}{hint}")
        return answer

    def show(self, value: Any) -> str:
        return getattr(value, "__name__", "a function")

    def encode(self, value: Any) -> Any:
        return f"function {getattr(value, '__name__', '?')}"


class FunctionPair(Function):
    """Two learner-written functions passed together, such as a (pack, unpack) pair of saved-tensor hooks."""

    label = "a pair of functions"

    def __init__(
        self, returns: Kind, cases: Callable[[], Seq], names: tuple[str, str] = ("pack", "unpack"), **options: Any
    ):
        super().__init__(returns, cases, **options)
        self.names = names

    def describe(self) -> str:
        return f"a pair of functions ({', '.join(self.names)}), passed as a tuple without calling them"

    def read(self, answer: Any) -> Any:
        if is_placeholder(answer):
            raise Unanswered()
        if callable(answer) and not isinstance(answer, type):
            raise BadAnswer(f"pass both functions as a pair: ({', '.join(self.names)})")
        if not isinstance(answer, (tuple, list)) or len(answer) != 2:
            raise BadAnswer(f"expected {self.describe()}, got {type_words(answer)}")
        for position, name, fn in zip(("first", "second"), self.names, answer):
            if is_placeholder(fn):
                raise Unanswered()
            if isinstance(fn, type) or not callable(fn):
                raise BadAnswer(
                    f"the {position} item ({name}) must be a function, got {type_words(fn)}; "
                    "pass the functions themselves, not what they return"
                )
        return tuple(answer)

    def show(self, value: Any) -> str:
        return " / ".join(getattr(f, "__name__", "a function") for f in value)

    def encode(self, value: Any) -> Any:
        return "functions " + self.show(value)
