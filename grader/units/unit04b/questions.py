"""Unit 04b, the path through modules and optimizers: what eval(), requires_grad_ and the grad-mode regions switch
off for a model, what a module registers, freezing and unfreezing, what an optimizer holds, writing to a
parameter, .to() before and after requires_grad, a module's backward hooks, fixes that only silence the symptom,
and the procedure for "why is .grad None?".

Seven of its questions were unit 04's until 0.5.0 (:mod:`grader.engine.moves` maps their old ids)."""

from __future__ import annotations

import torch

from grader import probes
from grader.engine.kinds import Choice, Function, Names, Sequence
from grader.engine.question import exercise, predict_then_run, self_test
from grader.probes import traces
from grader.units.switches import guarded
from grader.units.unit04b.cases import why_cases
from grader.units.unit04b.generators import (
    ENC_GRAD_STATES,
    frozen_grad_program,
    held,
    held_program,
    modes_program,
    trapped,
)
from grader.units.unit04b.support import (
    FREEZES,
    HELD_PLACES,
    LAYER_PLACES,
    LEGACY_SEES,
    PATCH_FACTS,
    UNFREEZE_FACTS,
    WRITES,
    four_ways_off,
    frozen_model,
    grad_field_state,
    grad_is_set,
    legacy_sees,
    moved_three,
    outcome_key,
    patched_facts,
    tower_moved,
    unfreeze_later,
    write_outcome,
)

# --- 1. turning gradients off for a whole model ------------------------------------------------------


@predict_then_run(
    "04b.four-offs",
    Names(pool=("a", "b", "c", "d")),
    prompt="lin = torch.nn.Linear(3, 2); x = torch.randn(4, 3, requires_grad=True). with torch.no_grad(): "
    "a = lin(x). with torch.inference_mode(): b = lin(x). Then lin.eval(); c = lin(x). Then "
    "for p in lin.parameters(): p.requires_grad_(False); d = lin(x). Which of a, b, c, d have a grad_fn? "
    "Answer a set of names.",
    explain="no_grad and inference_mode are regions: nothing inside is recorded. eval() only switches layers "
    "such as dropout and batch norm to their evaluation behaviour; autograd records as before. "
    "requires_grad_(False) freezes the parameters, but x still requires grad, so the layer is recorded "
    "for x's sake.",
    misconceptions=[
        (
            lambda truth: set(truth) - {"c"},
            "model.eval() does not turn autograd off: it changes how layers such as dropout behave. "
            "The output still has a grad_fn.",
        )
    ],
)
def four_offs():
    made = four_ways_off()
    return {n for n, t in made.items() if t.grad_fn is not None}


@predict_then_run(
    "04b.nested-modes",
    Sequence(),
    prompt="w = torch.tensor(2.0, requires_grad=True). with torch.no_grad(): a = w * 3; inside it, with "
    "torch.enable_grad(): b = w * 3, and inside that, with torch.set_grad_enabled(False): c = w * 3; "
    "back in the no_grad block (after the enable_grad block): d = b * 2. What are the class names of "
    "a.grad_fn, b.grad_fn, c.grad_fn, d.grad_fn? Answer a list, writing 'None' where there is none.",
    explain="Grad mode is one switch, and the innermost block sets it for as long as it lasts: enable_grad "
    "turns recording back on inside no_grad, set_grad_enabled(False) turns it off again, and when a "
    "block ends the previous setting returns. d is computed under no_grad, so it is not recorded even "
    "though b was.",
    misconceptions=[
        (
            lambda truth: [truth[0], truth[1], truth[2], truth[1]],
            "d = b * 2 runs back inside the no_grad block: whether b has a history does not matter, the "
            "multiplication itself is not recorded.",
        )
    ],
)
def nested_modes():
    w = torch.tensor(2.0, requires_grad=True)
    with torch.no_grad():
        a = w * 3
        with torch.enable_grad():
            b = w * 3
            with torch.set_grad_enabled(False):
                c = w * 3
        d = b * 2
    return [probes.node_name(t.grad_fn) for t in (a, b, c, d)]


# --- 2. what a module registers ------------------------------------------------------------------------


@predict_then_run(
    "04b.which-layers-learn",
    Names(pool=LAYER_PLACES),
    prompt="Tower (as the notebook defines it) keeps one nn.Linear(2, 2) in each of a Python list (in_list), a "
    "Python dict (in_dict), an nn.ModuleList (in_module_list) and an nn.ModuleDict (in_module_dict), and its "
    "forward first sets self.gain = nn.Parameter(torch.ones(1)), then returns the four layers' outputs, "
    "summed, through tanh, summed, times self.gain. torch.manual_seed(0); model = Tower(); opt = "
    "torch.optim.SGD(model.parameters(), lr=0.5); x = torch.randn(5, 2); two steps of opt.zero_grad(); "
    "model(x).backward(); opt.step(). Which of 'in_list', 'in_dict', 'in_module_list', 'in_module_dict' (each "
    "layer's weight) and 'gain' (model.gain as it is after the last step) changed value? Answer a set.",
    explain="model.parameters() lists the parameters a module registered: those of every nn.Module and every "
    "nn.Parameter assigned to one of its attributes. A Python list or dict is neither, so the layers kept in "
    "them are not listed and SGD never saw them: backward gives their weights a .grad, and nothing moves them. "
    "The gain is registered, but forward makes a new one at every call, after the optimizer was built: the "
    "optimizer holds none of them, and each call starts again from ones.",
    misconceptions=[
        (
            lambda truth: set(truth) | {"in_list", "in_dict"},
            "a Python list or dict of layers is not a module: the layers inside it are not registered, so "
            "model.parameters() does not list them and the optimizer never updates them, though they get a .grad",
        ),
        (
            lambda truth: set(truth) | {"gain"},
            "forward makes a new nn.Parameter at every call: the optimizer, built before, never held any of "
            "them, and each call starts from ones again",
        ),
    ],
)
def which_layers_learn():
    return tower_moved()


# --- 3. freezing, and what the optimizer holds ----------------------------------------------------------


@predict_then_run(
    "04b.freeze-three-ways",
    Names(pool=FREEZES),
    prompt="enc = nn.Linear(3, 3), head = nn.Linear(3, 1). Three freezes, each tried on a fresh pair: "
    "'enc.requires_grad = False', 'enc.requires_grad_(False)', 'for p in enc.parameters(): p.requires_grad = "
    "False'. After each, head(enc(torch.randn(4, 3))).sum().backward(). Which of the three leave "
    "enc.weight.grad None? Answer a set of the freezes.",
    explain="requires_grad_(False) on a module sets the flag of every parameter it holds, and so does the loop. "
    "enc.requires_grad = False only creates a plain Python attribute on the module object: no parameter's flag "
    "changes, and enc's weight gets its gradient as before.",
    misconceptions=[
        (
            lambda truth: set(truth) | {FREEZES[0]},
            "a module has no requires_grad flag of its own: assigning enc.requires_grad sets a plain attribute "
            "and leaves every parameter's flag as it was",
        )
    ],
)
def freeze_three_ways():
    return {label for label in FREEZES if frozen_model(label)[0].weight.grad is None}


@predict_then_run(
    "04b.unfreeze-later",
    Names(pool=UNFREEZE_FACTS),
    prompt="torch.manual_seed(0); enc, head = nn.Linear(3, 3), nn.Linear(3, 1); model = nn.Sequential(enc, "
    "nn.Tanh(), head); enc.requires_grad_(False); opt = torch.optim.SGD([p for p in model.parameters() if "
    "p.requires_grad], lr=0.1); then enc.requires_grad_(True) to fine-tune it too. Three steps of "
    "opt.zero_grad(); loss = ((model(x) - y) ** 2).mean(); loss.backward(); opt.step() (x, y random). Which of "
    "these hold: " + ", ".join(repr(f) for f in UNFREEZE_FACTS) + "? Answer a set.",
    explain="The optimizer holds the tensors it was given when it was built: the list held only the head's, "
    "because the encoder was frozen then. Unfreezing later makes backward fill enc.weight.grad, but step() and "
    "zero_grad() work on the optimizer's own tensors only: the encoder never moves, and its gradient is never "
    "cleared, so it adds up step after step.",
    misconceptions=[
        (
            lambda truth: set(truth) | {"enc.weight moved"},
            "the optimizer keeps the list of tensors it was built with; unfreezing afterwards adds nothing to it",
        ),
        (
            lambda truth: set(truth) | {"opt.zero_grad() cleared enc.weight.grad"},
            "zero_grad() clears the gradients of the optimizer's own tensors; the encoder's is not one of them",
        ),
    ],
)
def unfreeze_later_facts():
    return unfreeze_later()


# --- 4. writing to a registered parameter ---------------------------------------------------------------


@predict_then_run(
    "04b.write-to-weight",
    Sequence(key=outcome_key),
    prompt="torch.manual_seed(0); lin = nn.Linear(3, 2); opt = torch.optim.SGD(lin.parameters(), lr=0.1). Four "
    "writes, each tried on a fresh lin and opt: " + "; ".join(f"({i + 1}) {w}" for i, w in enumerate(WRITES)) + ". "
    "For each, in order, say 'raises', 'opt loses it' (afterwards lin.weight is a tensor opt does not hold) or "
    "'opt keeps it'. Answer a list of four.",
    explain="A name a module registered as a parameter takes only an nn.Parameter (or None): the product is a "
    "plain tensor with a history, and the assignment raises a TypeError. nn.Parameter(...) makes a new leaf, "
    "which the module now holds and the optimizer never saw. An in-place write under no_grad and an assignment "
    "to .data change the values of the same object, which the optimizer still holds.",
    misconceptions=[
        (
            lambda truth: ["opt loses it" if t == "raises" else t for t in truth],
            "the module refuses the assignment itself: a registered parameter's name takes only an nn.Parameter "
            "or None, and the product is a plain tensor",
        ),
        (
            lambda truth: ["opt keeps it" if t == "opt loses it" else t for t in truth],
            "nn.Parameter(...) makes a new tensor object; the optimizer keeps updating the one it was given",
        ),
    ],
)
def write_to_weight():
    return [write_outcome(label) for label in WRITES]


# --- 5. .to() before and after requires_grad ---------------------------------------------------------


@predict_then_run(
    "04b.to-order",
    Names(pool=("a", "b", "c")),
    prompt="torch.manual_seed(0); a = torch.randn(3, requires_grad=True).to(torch.float64); b = "
    "torch.randn(3).to(torch.float64).requires_grad_(); c = nn.Linear(3, 1).to(torch.float64).weight; then "
    "(a.sum() + b.sum() + c.sum()).backward(). Which of a, b, c have a .grad that is not None? Answer a set "
    "of names.",
    explain="a is the result of a recorded conversion (ToCopyBackward0), not a leaf: its gradient passes on to "
    "the float32 leaf nobody named, and a.grad stays None (torch warns when it is read). b was converted first "
    "and then asked to require grad: a leaf. Module.to() converts each parameter in place, keeping the same "
    "nn.Parameter objects, leaves that get their .grad.",
    misconceptions=[
        (
            lambda truth: set(truth) | {"a"},
            "a is what .to() returned: a recorded copy of the leaf, not a leaf itself, so backward does not keep "
            "its gradient",
        ),
        (
            lambda truth: set(truth) - {"c"},
            "Module.to() keeps each nn.Parameter object and converts its data: the weight is still a leaf",
        ),
    ],
)
def to_order():
    return {name for name, t in moved_three().items() if grad_is_set(t)}


# --- 6. a module's backward hooks -----------------------------------------------------------------------


@predict_then_run(
    "04b.legacy-hook-sees",
    Choice(*LEGACY_SEES),
    prompt="Affine (as the notebook defines it) returns self.lin(x) + self.offset, with lin = nn.Linear(3, 2) and "
    "offset an nn.Parameter of shape (2,). model.register_backward_hook(hook) (the legacy one), where hook "
    "records grad_input; x = torch.randn(4, 3, requires_grad=True); model(x).sum().backward(). What is "
    "grad_input: " + ", ".join(repr(c) for c in LEGACY_SEES) + "?",
    explain="The legacy hook is registered on the last node the forward made, here the addition's node, "
    "and its grad_input is that node's: the gradients for lin's output (4, 2) and for offset (2,). The "
    "gradient with respect to x never reaches it. register_full_backward_hook gives the gradient with respect "
    "to the module's input, x (4, 3).",
    misconceptions=[
        (
            LEGACY_SEES[0],
            "that is what register_full_backward_hook gives; the legacy hook sits on the last operation of the "
            "forward and passes on that operation's grad_input",
        )
    ],
)
def legacy_hook_sees():
    return legacy_sees()


# --- 7. fixes that silence the symptom -------------------------------------------------------------------


@predict_then_run(
    "04b.patched-loss-facts",
    Names(pool=PATCH_FACTS),
    prompt="x = [1., 2., 3.], y = 2 * x, w = torch.tensor(0.0) created without requires_grad, "
    "opt = torch.optim.SGD([w], lr=0.05). Twenty steps of: loss = ((w * x - y) ** 2).mean(); "
    "loss.requires_grad = True; opt.zero_grad(); loss.backward(); opt.step(). After the last step, which "
    "of these hold: 'loss.is_leaf', 'loss.grad is not None', 'w.grad is not None', 'w moved'? Answer a set.",
    explain="Setting requires_grad on the loss makes the loss itself a new leaf: backward runs from it and "
    "computes the only gradient there is, d loss / d loss = 1, into loss.grad. Nothing recorded w, so "
    "w.grad stays None, SGD skips w, and w never moves.",
    misconceptions=[
        (
            lambda truth: set(truth) | {"w.grad is not None", "w moved"},
            "requires_grad set on the loss cannot reach back: the product with w was never recorded, so "
            "backward has no path to w",
        ),
        (
            lambda truth: set(truth) - {"loss.grad is not None"},
            "the patched loss is a leaf that requires grad, and backward starts from it: it accumulates its "
            "own gradient, d loss / d loss = 1",
        ),
    ],
)
def patched_loss_facts():
    return patched_facts()


FAKE_FIX_SOURCE = """\
x = torch.tensor([1.0, 2.0, 3.0])
target = 2 * x
encoder_scale = torch.tensor(2.0, requires_grad=True)
head_weight = torch.tensor(0.5, requires_grad=True)
with torch.no_grad():
    features = encoder_scale * x
features.requires_grad_(True)
prediction = head_weight * features
loss = ((prediction - target) ** 2).mean()
loss.backward()"""


FAKE_FIX_NAMES = ("encoder_scale", "head_weight", "features", "prediction")


@predict_then_run(
    "04b.fake-fix-grads",
    Names(pool=FAKE_FIX_NAMES),
    prompt="encoder_scale = 2.0 and head_weight = 0.5 require grad; x = [1., 2., 3.], target = 2 * x. "
    "with torch.no_grad(): features = encoder_scale * x; then features.requires_grad_(True) (the "
    "'fix'); prediction = head_weight * features; loss = ((prediction - target) ** 2).mean(); "
    "loss.backward(). Which of encoder_scale, head_weight, features, prediction have a .grad that is "
    "not None? Answer a set of names.",
    explain="requires_grad_(True) made features a new leaf in the middle of the model: it gets a real "
    "gradient, and so does the head, but encoder_scale.grad stays None, because the multiplication "
    "that used it was never recorded. prediction is a non-leaf, so its gradient was passed on, not kept.",
    misconceptions=[
        (
            lambda truth: set(truth) | {"encoder_scale"},
            "requires_grad_(True) makes features a new leaf from here on; it cannot reach back to the "
            "multiplication that ran under no_grad, so nothing leads to encoder_scale.",
        )
    ],
)
def fake_fix_grads():
    tr = traces.trace(FAKE_FIX_SOURCE)
    named = {n: tr.names[n] for n in FAKE_FIX_NAMES}
    return {n for n, t in named.items() if (t.is_leaf or t.retains_grad) and t.grad is not None}


# --- 8. why is .grad None? ------------------------------------------------------------------------


@exercise(
    "04b.why-grad-none",
    Function(
        returns=Choice(*traces.CAUSES),
        cases=why_cases,
        call=guarded(
            "ask the questions of section 8 yourself, with reachable_leaves and first_broken_edge",
            {"grader.probes.traces.diagnose": "grader.probes.traces.diagnose"},
            call=lambda fn, case, ns: fn(ns["trace"], ns["name"]),
        ),
    ),
    prompt="Write why_grad_none(trace, name): trace is a traced program (steps, each with step.grad_names, the "
    "names whose leaf held a .grad right after that step; trace.names with every name's value when it "
    "ended; trace.loss), and trace.names[name].grad is None. Return the cause, one of: "
    + ", ".join(repr(c) for c in traces.CAUSES)
    + ". It is checked on generated programs whose names, spellings and harmless look-alikes (a detached copy "
    "for a log, a zero_grad() before backward, a name rebound before it is used) are drawn per case, with the "
    "course's own diagnosis (grader.probes.traces.diagnose) switched off while it runs.",
    explain="The procedure asks in order: is it the tensor the loss was computed from (rebound name)? does it "
    "require grad (never entered)? is it a leaf (non-leaf not retained)? does the loss reach it? If it "
    "does, backward either never ran or ran and its result was cleared afterwards (zero_grad(), "
    ".grad = None): the steps' grad_names tell which. If not, what cut the path: detach, no_grad, "
    "inference_mode, a value taken out with .item() or .tolist(), or an operation with no derivative "
    "(argmax, a comparison, an integer cast).",
    hints=(
        "Ask the questions in the order of section 8, each with live evidence: `is` for the rebinding, "
        "requires_grad, is_leaf, then your reachable_leaves(trace.loss).",
        "When the loss reaches the tensor, the record is whole: look at step.grad_names to see whether the "
        "gradient ever arrived (then something cleared it) or never did.",
        "When it does not, your first_broken_edge gives the statement; read what it does: a no_grad or "
        "inference_mode block, a detach, .item()/.tolist(), or a result with an integer or bool dtype.",
    ),
)
def why_grad_none_ex(case):
    ns = case.fresh()
    return traces.diagnose(ns["trace"], ns["name"])


# --- self-test -------------------------------------------------------------------------------------


@self_test(
    "04b.closed-book-frozen-grad",
    Choice(*ENC_GRAD_STATES),
    program=frozen_grad_program,
    explain="Only a backward pass that reaches enc writes enc.grad. Where enc's path to the loss is cut (detach, "
    "no_grad, .item(), a rebuild from Python numbers) none ever does, and enc.grad stays None; a recorded op with "
    "derivative 0 (round, sign) reaches it with zeros. zero_grad(set_to_none=False) zeroes a .grad that exists and "
    "creates none; zero_grad() sets each .grad to None; without zero_grad the gradients add up. A loss with no path "
    "to any parameter has no grad_fn, and backward raises.",
    hints=(
        "Does any backward pass reach enc? Where does its path to the loss stop, if it stops?",
        "zero_grad(set_to_none=False) calls .zero_() on each .grad that is not None; zero_grad() sets them to None. "
        "Which ran last: backward or zero_grad?",
    ),
    misconceptions=[
        (
            lambda truth, p: (
                "a tensor of zeros"
                if truth == "None" and p.facts["reach"] == "cut" and "set_to_none=False" in p.facts["zero_grad"]
                else None
            ),
            "zero_grad(set_to_none=False) zeroes existing gradients; enc never had one, so its .grad is still None.",
        ),
        (
            lambda truth, p: "a tensor of zeros" if truth == "None" and p.facts["reach"] != "cut" else None,
            "opt.zero_grad() with no argument sets each .grad to None (set_to_none=True is its default); it does not fill "
            "it with zeros.",
        ),
        (
            lambda truth, p: "a nonzero tensor" if truth == "None" and p.facts["reach"] == "cut" else None,
            "no backward pass reaches enc: its path to the loss is cut, so nothing is ever written to enc.grad.",
        ),
        (
            lambda truth, p: "None" if truth == "a tensor of zeros" and p.facts["reach"] == "flat" else None,
            "that op is recorded: its derivative is 0, so backward reaches enc and writes zeros to enc.grad.",
        ),
        (
            lambda truth, p: "None" if truth == "an error at backward" else None,
            "the loss reads no parameter through a recorded op: it has no grad_fn, and backward raises.",
        ),
    ],
)
def closed_book_frozen_grad(p):
    try:
        ns = p.run()
    except RuntimeError:  # only backward raises in these programs
        return "an error at backward"
    return grad_field_state(ns["enc"])


@self_test(
    "04b.closed-book-modes",
    Names(pool=("a", "b", "c", "d")),
    program=modes_program,
    explain="A decorator is a with-block around the function's body, and the innermost setting wins while it "
    "lasts: tracked records even inside no_grad or set_grad_enabled(False), frozen's result has no history, and an "
    "op outside both functions follows the region it runs in. An op records only if an input requires grad, so "
    "tracked records nothing of an input made with grad mode off; and inference_mode is not undone by enable_grad.",
    hints=(
        "Treat each decorator as a with-block around the function's body, and ask which setting is "
        "innermost when each multiplication or addition runs.",
        "Only the operation that produces a tensor decides whether it has a grad_fn, and only if one of its inputs "
        "requires grad; enable_grad turns grad mode back on, but not inside inference_mode.",
    ),
    misconceptions=[
        (
            lambda truth, p: set(truth) | trapped(p, "inference") if trapped(p, "inference") else None,
            "enable_grad inside inference_mode switches grad mode on, yet nothing is recorded: "
            "inference_mode is a stronger setting that enable_grad does not undo.",
        ),
        (
            lambda truth, p: set(truth) - trapped(p, "inner enable") if trapped(p, "inner enable") else None,
            "tracked's own enable_grad is innermost while its body runs: it records even inside a region "
            "that turned grad mode off.",
        ),
        (
            lambda truth, p: set(truth) | trapped(p, "no input") if trapped(p, "no input") else None,
            "tracked records, but the tensor it was given was made with grad mode off and requires no grad: "
            "there is nothing to record.",
        ),
        (
            lambda truth, p: set(truth) - trapped(p, "outside") if trapped(p, "outside") else None,
            "frozen's result has no history, but the product with w runs outside frozen, with grad mode on, and "
            "w requires grad: it is recorded.",
        ),
        (
            lambda truth, p: set(truth) | trapped(p, "after") if trapped(p, "after") else None,
            "tracked's result has a grad_fn, but the op applied to it afterwards runs in the region around the "
            "call, with grad mode off: the final result has none.",
        ),
    ],
)
def closed_book_modes(p):
    ns = p.run()
    return {n for n in ("a", "b", "c", "d") if ns[n].grad_fn is not None}


@self_test(
    "04b.closed-book-held",
    Names(pool=HELD_PLACES),
    program=held_program,
    explain="An optimizer holds the tensor objects that parameters() listed when it was built, and moves those that "
    "got a gradient. module.requires_grad = False sets a plain attribute and freezes nothing; requires_grad_(False) "
    "freezes, and a parameter with no .grad is skipped. Layers in a Python list are not registered: never listed, "
    "never moved (a ModuleList registers them). A new nn.Parameter assigned after the optimizer was built is a new "
    "object the optimizer does not hold.",
    hints=(
        "For each tensor ask two questions: did backward give it a .grad, and is it one of the tensor objects in "
        "opt.param_groups?",
        "A list of layers is not registered; module.requires_grad = ... sets a plain attribute; a new "
        "nn.Parameter is a new object.",
    ),
    misconceptions=[
        (
            lambda truth, p: set(truth) - {"stem.weight"} if p.facts["freeze"] == "attribute" else None,
            "stem.requires_grad = False sets a plain attribute on the module: the stem's parameters still "
            "require grad, the optimizer holds them, and they move",
        ),
        (
            lambda truth, p: set(truth) | {"heads['cls'].weight"} if p.facts["replace"] == "weight after" else None,
            "the head's weight was replaced by a new nn.Parameter after the optimizer was built: it holds the old one",
        ),
        (
            lambda truth, p: set(truth) | {"heads['cls'].bias"} if p.facts["replace"] == "bias after" else None,
            "the head's bias was replaced by a new nn.Parameter after the optimizer was built: it holds the old one",
        ),
        (
            lambda truth, p: set(truth) | {"branches[0].weight"} if p.facts["container"] == "list" else None,
            "layers kept in a plain Python list are not registered: parameters() never lists them, so the "
            "optimizer never moves them (they do get a .grad)",
        ),
        (
            lambda truth, p: set(truth) - {"branches[0].weight"} if p.facts["container"] == "ModuleList" else None,
            "an nn.ModuleList registers its layers: parameters() lists them, and the optimizer moves them",
        ),
        (
            lambda truth, p: set(truth) | {"stem.weight"} if p.facts["freeze"] == "method" else None,
            "requires_grad_(False) does freeze the stem: it gets no .grad, and the optimizer skips a parameter "
            "whose .grad is None",
        ),
    ],
)
def closed_book_held(p):
    before, after = p.run(until="training"), p.run()
    return {name for name in HELD_PLACES if not torch.equal(held(before, p, name), held(after, p, name))}
