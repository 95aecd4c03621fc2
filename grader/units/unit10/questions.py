"""Unit 10, the capstone: audit training programs you did not write, and prove each repair.

The programs come from :mod:`grader.units.unit10.capstone`: small two-stage models (an encoder weight, a head weight,
sometimes a bias) trained by ``torch.optim.SGD`` for a few steps, each with at most one planted fault.
The worked example, the traps and the self-test use fixed specifications; the exercise uses the generated
cases of :mod:`grader.units.unit10.cases`, graded by :class:`grader.units.unit10.kinds.FaultAtLine`. Every answer is read from torch's record at check time: which leaves a
loss reaches, which saved tensors went stale, which graphs a later step reaches, what ``.grad`` holds,
which parameters moved, and how each step's gradients compare with an independent reference.
"""

from __future__ import annotations

from grader.engine.kinds import Choice, Error, Function, Names, Number
from grader.engine.question import exercise, predict_then_run, self_test
from grader.probes import traces
from grader.units.causes import PASS_TWICE
from grader.units.switches import guarded
from grader.units.unit10 import capstone
from grader.units.unit10.capstone import (
    CARRIED,
    DETACHED,
    FACTS,
    STALE,
    VERDICTS,
    Fault,
    Spec,
    render,
)
from grader.units.unit10.cases import exercise_cases
from grader.units.unit10.generators import (  # programs A to D: a learner's copy from before variants imports them
    SELF_A,  # noqa: F401
    SELF_B,  # noqa: F401
    SELF_C,  # noqa: F401
    SELF_D,  # noqa: F401
    broken_c_program,
    kind_a_program,
    kind_b_program,
    kind_d_program,
)
from grader.units.unit10.kinds import FaultAtLine
from grader.units.unit10.support import line_of, module_loop

# --- the worked example: a script that runs, trains, and carries its history -------------------------

WORKED = render(
    Spec(
        template="sequence",
        x=((0.5, -1.0), (1.2, 0.3), (-0.4, 0.8), (0.9, -0.6)),
        y=(0.4, -0.3, 0.6, 0.1),
        w_enc=((0.8, -0.5), (0.3, 0.9)),
        w_head=(0.6, -0.7),
        steps=4,
        lr=0.2,
        shift=True,
        log=True,
        metric=True,
    ),
    Fault(CARRIED, retain=True),
    "the worked example",
)

# The repair the notebook makes: a plain backward, and the carried state detached once the step is done.
WORKED_REPAIRED = (
    WORKED.source.replace("loss.backward(retain_graph=True)", "loss.backward()") + "\n    state = state.detach()"
)

PLACES4 = tuple(f"at step {n}'s backward" for n in range(1, 5))


def _worked_run(steps=None):
    return capstone.step_through(WORKED, steps=steps)


@predict_then_run(
    "10.worked-runs",
    Error(*PLACES4),
    prompt="The worked example, lines numbered: " + WORKED.inline() + ". Run as written, does it raise, and "
    "if so at which step's backward? Answer 'no error' or \"at step n's backward\" (the place is graded).",
    misconceptions=[
        (
            "at step 2's backward",
            "That is the error this loop would raise without the flag: "
            "retain_graph=True keeps step 1's saved values, so step 2's walk back into them succeeds.",
        )
    ],
    explain="retain_graph=True keeps every saved value a graph holds after its backward, so a later backward "
    "that walks back into an earlier step's graph finds what it needs, and nothing else in the script raises. "
    "Running tells you nothing here: the flag would silence the error such a walk raises without it.",
)
def worked_runs():
    yield from capstone.backward_places(WORKED)


@predict_then_run(
    "10.worked-reached",
    Names(pool=WORKED.params),
    prompt=f"In the worked example, line {line_of(WORKED, 'log.append')} appends h.detach() to a log and line "
    f"{line_of(WORKED, 'no_grad')} opens a block that computes a metric under torch.no_grad(). Which parameters does step 1's loss reach (backward from it would accumulate into "
    "them)? Answer a set of names.",
    explain="A cut matters only on a route to the loss. The detached copy goes into a list and the no_grad "
    "metric is computed after the loss from its inputs; the loss itself is computed from h and the "
    "state, which carry the record of both parameters.",
)
def worked_reached():
    run = _worked_run(steps=1)
    names = run.trace(1).names
    return {n for n in WORKED.params if traces.reaches(run.loss(1), names[n])}


@predict_then_run(
    "10.worked-depths",
    Number(tol=0),
    prompt="The worked example runs 4 steps. probes.depth(loss) counts the nodes on the longest path from "
    "loss.grad_fn down to a leaf; for step 1's loss it is the number depth(loss1) printed above. What is it for the "
    "losses of steps 1 to 4? Answer four numbers.",
    explain="Each step's loss sits on top of the graphs of all earlier steps: every step adds one more "
    "multiplication and one more addition to the path, two nodes more per step.",
)
def worked_depths():
    return _worked_run().depths()


@predict_then_run(
    "10.worked-carrier",
    Number(tol=0),
    prompt="Step 2's loss in the worked example reaches nodes that were made at step 1. Step 2 reads a name "
    "whose value, with its graph, was bound at step 1: on which line was it bound? Answer the line "
    "number.",
    explain="At step 2 the state line reads state as step 1 left it, and step 1's state has a grad_fn. That "
    "binding is where the history crosses from one step into the next: the first broken edge of a "
    "carried-state leak, and the place a detach belongs (after the step has used it).",
)
def worked_carrier():
    found = capstone.crossings(_worked_run(steps=2), 2)
    return found[0][2].number


@predict_then_run(
    "10.worked-first-differs",
    Number(tol=0),
    prompt="A reference computes each step's gradients for the computation the script means (the state entering "
    "each step as a constant) with torch.autograd.grad. At opt.step() of each of the 4 steps, the script's "
    "w_enc.grad and w_head.grad are compared with it (to within 1e-5). At which step do they first differ?",
    explain="At step 1 there is no history yet, so the leak changes nothing. From step 2 on, each backward also "
    "differentiates through the earlier steps, and the gradient becomes that of a different quantity.",
)
def worked_first_differs():
    matches = capstone.prove(WORKED).matches
    return next(i + 1 for i, ok in enumerate(matches) if not ok)


# The repair's detach, put where it cuts the step's own path too: right after the state is computed, before the
# prediction reads it.
WORKED_DETACHED_EARLY = WORKED.source.replace("loss.backward(retain_graph=True)", "loss.backward()").replace(
    "    state = 0.5 * state + h\n", "    state = 0.5 * state + h\n    state = state.detach()\n"
)


@predict_then_run(
    "10.worked-detach-placement",
    Names(pool=WORKED.params),
    prompt="Repair the worked example with the detach in the wrong place: replace loss.backward(retain_graph=True) "
    "by loss.backward() and put state = state.detach() right after line "
    + str(line_of(WORKED, "state = 0.5"))
    + " (state = 0.5 * state + h), before pred = state @ w_head reads the state. Over the 4 steps, which "
    "parameters move? Answer a set of names.",
    explain="Detached before the prediction reads it, the state reaches the loss as a constant: the history is "
    "cut, and so is the step's own path from w_enc (through h and the state). w_head, which multiplies the "
    "state, still gets its gradient and moves; w_enc gets none and stays where it was.",
    misconceptions=[
        (
            lambda truth: set(WORKED.params),
            "the detach also cuts the path of the step itself: w_enc reaches the loss only through the state",
        )
    ],
)
def worked_detach_placement():
    moved = capstone.prove(WORKED, WORKED_DETACHED_EARLY).moved
    return {name for name in WORKED.params if moved.get(name)}


# --- trap 1: "the loss went down, so it is fixed" ---------------------------------------------------

FROZEN = render(
    Spec(
        template="batch",
        x=((1.0, 0.5), (-0.5, 1.5), (0.8, -1.0)),
        y=(0.9, -0.4, 0.6),
        w_enc=((0.4, -0.6), (0.7, 0.2)),
        w_head=(0.5, 0.9),
        steps=6,
        lr=0.3,
    ),
    Fault(DETACHED, form="copy"),
    "the frozen encoder",
)
FROZEN_RUNS = {
    "as found": FROZEN.source,
    "fake repair": FROZEN.source.replace(
        "    log.append(kept)\n", "    log.append(kept)\n    kept.requires_grad_(True)\n"
    ),
    "real repair": FROZEN.source.replace("    pred = kept @", "    pred = h @"),
}


def _frozen_proofs():
    return {label: capstone.prove(FROZEN, source) for label, source in FROZEN_RUNS.items()}


@predict_then_run(
    "10.trap-loss-falls",
    Names(pool=tuple(FROZEN_RUNS)),
    prompt="The same three runs of the frozen encoder (as found; with kept.requires_grad_(True) added after the "
    "detach, the 'fake repair'; with h itself sent to the head, the 'real repair'), 6 steps each. In which of them "
    "is the loss lower at the last step than at the first? Answer a set of the runs' labels.",
    explain="On a fixed batch w_head alone can lower the loss, and it trains in all three runs. A falling loss says "
    "that something trains, not that the part you repaired does: requires_grad_(True) makes kept a new leaf and "
    "w_enc still gets nothing. The quantity the fault broke, w_enc moving, tells the runs apart.",
    misconceptions=[
        (
            {"real repair"},
            "w_head is trained in every run, and on a fixed batch it can lower the loss alone",
        ),
        (
            {"fake repair", "real repair"},
            "as found, w_enc is frozen but w_head still trains, and the loss falls with it",
        ),
    ],
)
def trap_loss_falls():
    return {label for label, proof in _frozen_proofs().items() if proof.losses[-1] < proof.losses[0]}


# --- trap 2: retain_graph=True on a stale graph -----------------------------------------------------

STALE_SPEC = Spec(
    template="batch",
    x=((0.6, -1.2), (1.1, 0.4)),
    y=(0.5, -0.7),
    w_enc=((0.9, 0.3), (-0.4, 0.8)),
    w_head=(0.7, -0.5),
    steps=4,
    lr=0.3,
)
STALE_EX = render(STALE_SPEC, Fault(STALE), "the cached encoder")
STALE_RETAINED = STALE_EX.source.replace("loss.backward()", "loss.backward(retain_graph=True)")


@predict_then_run(
    "10.stale-where",
    Error(*PLACES4, causes=PASS_TWICE),
    prompt=(
        "The cached encoder: " + STALE_EX.inline() + ". Does it raise, and if "
        "so at which step's backward? For an error, answer a pair (place, cause), the cause chosen from the "
        "candidates listed with the answer's form; your own words may follow as a third item, a note shown "
        "beside torch's message and never graded."
    ),
    misconceptions=[
        (
            "no error",
            "h was computed once, before the loop: every step's loss walks back into the "
            "same tanh and matmul nodes, whose saved values step 1's backward freed.",
        )
    ],
    explain="h was computed once, before the loop, so every step's loss runs back through the same tanh and "
    "matmul nodes. Step 1's backward freed what they saved; step 2's backward needs it again.",
)
def stale_where():
    yield from capstone.backward_places(STALE_EX)


@predict_then_run(
    "10.stale-retain-facts",
    Names(pool=FACTS),
    prompt="Add retain_graph=True to the cached encoder's backward and run its 4 steps. Which of these hold: '"
    + "', '".join(FACTS)
    + "'? (The reference is the computation with the encoder inside the loop.)",
    explain="The flag keeps step 1's saved values, so the old graph can be walked again: nothing raises, both "
    "parameters get gradients and move, and the depth never changes. But every step differentiates the "
    "loss at the features of step 1's w_enc, so from step 2 on the gradients are not those of the "
    "model as it now is. Only the comparison with the reference shows it.",
)
def stale_retain_facts():
    return set(capstone.prove(STALE_EX, STALE_RETAINED).facts)


# --- checks on an nn.Module loop, written without the course's helpers ----------------------------------


@predict_then_run(
    "10.module-unheld",
    Names(pool=("0.weight", "0.bias", "2.weight", "2.bias")),
    prompt="torch.manual_seed(0); model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)); "
    "opt = torch.optim.SGD(model.parameters(), lr=0.1); then model[2] = nn.Linear(4, 1). Which of "
    "model.named_parameters() are not among the tensors in opt.param_groups? Answer a set of names.",
    explain="opt.param_groups holds the tensors model.parameters() yielded when opt was built. Assigning a new "
    "Linear replaces the module, and its weight and bias are new tensors that opt never saw: they get "
    "gradients and never move.",
    misconceptions=[
        (
            lambda truth: set(),
            "opt keeps the tensors it was given, not the model: the new head's tensors were made after it.",
        )
    ],
)
def module_unheld():
    model, opt = module_loop()
    held = {id(p) for group in opt.param_groups for p in group["params"]}
    return {n for n, p in model.named_parameters() if id(p) not in held}


# --- self-test ------------------------------------------------------------------------------------------


@self_test(
    "10.self-kind-a",
    Choice(*VERDICTS),
    program=kind_a_program,
    explain="Each of these faults breaks the path from a parameter to the loss in its own place: a name rebound to a "
    "new leaf (the loss reaches the new one, the optimizer holds the old one), a detach on the way (the path stops "
    "there), or an encoder run under no_grad (nothing was recorded). The checklist asks in that order: is the "
    "tensor the loss used the optimizer's, and does the loss reach it?",
    hints=(
        "Run the checklist in order and stop at the first item that finds something: are the tensors the loss used "
        "the ones opt updates? Does step 1's loss reach every parameter?",
        "Which tensor does opt hold for each parameter: the one made before the loop, or one a line binds later? "
        "Where the loss does not reach a parameter, what stopped the path: a detach, or a no_grad block?",
    ),
    misconceptions=[
        (
            lambda truth: "detached stage" if truth == "rebound parameter" else None,
            "The detach here makes a new leaf that the loss does reach; what it breaks is the link to the tensor "
            "the optimizer holds.",
        ),
        (
            lambda truth: "rebound parameter" if truth == "detached stage" else None,
            "the optimizer's tensor is the one the loss should reach; the detach cuts the path from it to the loss, "
            "so the loss never reaches it: a detached stage.",
        ),
        (
            lambda truth: "detached stage" if truth == "no_grad encoder" else None,
            "nothing is detached: the encoder ran under no_grad, which recorded nothing, so the loss has no path "
            "back to the encoder's weight.",
        ),
    ],
)
def self_kind_a(p):
    return capstone.audit(p.facts["training"]).kind


@self_test(
    "10.self-kind-b",
    Choice(*VERDICTS),
    program=kind_b_program,
    explain="Each of these faults is in what a graph keeps: a tensor a node saved written in place before backward "
    "reads it, a graph built before the loop that every step's loss reaches again, or a state carried into the "
    "next step with the previous step's graph (never detached).",
    hints=(
        "Look for a write in place (a method ending in _) and ask which node kept the tensor it writes; then look "
        "for a value made before the loop, or in an earlier step, that a later loss reaches with its graph.",
        "A product keeps each factor for the other's gradient. A value bound before the loop whose graph step 2's "
        "loss reaches is a stale graph; one bound at step 1 is a carried state.",
    ),
    misconceptions=[
        (
            lambda truth, p: (
                "carried state leak" if truth == "in-place on a saved tensor" and p.facts["sequence"] else None
            ),
            "The state is detached at the end of every step, so no later step reaches an earlier graph; the trouble "
            "is inside step 1.",
        ),
        (
            lambda truth: "in-place on a saved tensor" if truth == "stale graph" else None,
            "nothing here is written in place: the graph every loss reaches was built once, before the loop, and "
            "every step reuses it (freed by the first backward, or, where backward retains it, kept with the values "
            "it was built from).",
        ),
        (
            lambda truth: "stale graph" if truth == "carried state leak" else None,
            "the graph step 2 reaches was made in step 1, not before the loop: the state carries it from step to "
            "step because it is never detached.",
        ),
    ],
)
def self_kind_b(p):
    return capstone.audit(p.facts["training"]).kind


@self_test(
    "10.self-broken-c",
    Names(pool=FACTS),
    program=broken_c_program,
    explain="Each fault shows in what it breaks: a program that raises stops running; a parameter the loss never "
    "reaches, or one the optimizer does not hold, never moves; a carried graph grows; and every fault that changes "
    "the gradient (a sum of steps' gradients without zero_grad, a missing path, a stale value) makes a step's "
    "gradient differ from the reference. A program can run and move and still train on the wrong gradient.",
    hints=(
        "Which line that a training loop usually has is missing or changed in this one?",
        "Ask of each quantity in turn: does it raise? does every parameter move? is the graph as deep at every "
        "step? is each step's gradient the intended one?",
    ),
    misconceptions=[
        (
            lambda truth: set() if truth else None,
            "a program can run and move every parameter and still compute the wrong gradient: compare each step's "
            "gradients with the reference.",
        ),
        (
            lambda truth: set(truth) - {"runs without an error"} if "runs without an error" in truth else None,
            "it raises: a program that stops partway does not run without an error, whatever it did before.",
        ),
        (
            lambda truth: {"every step's gradients equal the reference"} if not truth else None,
            "every check came back clean: the suspicious lines are harmless, so each step's gradient is the "
            "intended one.",
        ),
    ],
)
def self_broken_c(p):
    return set(FACTS) - set(capstone.prove(p.facts["training"]).facts)


def _decoy(name: str, kind: str, note: str):
    """A wrong kind learners read into a harmless decoy line, offered where the program has that decoy and no
    fault."""
    return (lambda truth, p: kind if truth == "no fault" and p.facts["decoys"][name] else None, note)


@self_test(
    "10.self-kind-d",
    Choice(*VERDICTS),
    program=kind_d_program,
    explain="A suspicious line is harmless unless it sits on a route to the loss, or a later step walks what it "
    "kept: a detach that feeds only a log, a no_grad block that computes only a metric, retain_graph=True on a "
    "state detached at the end of each step. The checklist, asked in order, tells them from a real fault.",
    hints=(
        "Each suspicious line is harmless unless it sits on a route to the loss, or a later step walks what it "
        "kept. Check them one by one, then run the checklist in order.",
        "retain_graph=True matters only if a later backward walks this step's graph. Does anything carry this "
        "step's graph into the next one, given the last line of the loop?",
    ),
    misconceptions=[
        _decoy(
            "retain",
            "carried state leak",
            "The last line of the loop detaches the state, so the next step starts from a constant; "
            "retain_graph=True only keeps a graph nothing walks again.",
        ),
        _decoy(
            "log", "detached stage", "the detach feeds only the log; the loss reaches the features on its own path."
        ),
        _decoy(
            "metric",
            "no_grad encoder",
            "the no_grad block computes only a metric, after the loss: nothing the loss needs was made there.",
        ),
        (
            lambda truth: "no fault" if truth != "no fault" else None,
            "one line here is a real fault among the harmless ones: run the checklist in order and stop at the first "
            "item that finds something.",
        ),
    ],
)
def self_kind_d(p):
    return capstone.audit(p.facts["training"]).kind


# --- exercise 1: diagnose a program ----------------------------------------------------------------


@exercise(
    "10.diagnose",
    Function(
        returns=FaultAtLine(),
        cases=exercise_cases,
        call=guarded(
            "run the checklist yourself with step_through, first_broken_edge and nodes",
            {
                f"grader.units.unit10.capstone.{name}": f"grader.units.unit10.capstone.{name}"
                for name in ("audit", "crossings", "checklist")
            },
            call=lambda fn, case, ns: fn(ns["program"]),
        ),
    ),
    prompt="Write diagnose(program): audit a generated training program (program.source, program.lines, "
    "program.params; step_through(program, steps=2) walks it) and return (fault kind, line number), the "
    "kind one of " + ", ".join(repr(k) for k in capstone.KINDS) + ", or 'no fault'. The line is where the "
    "fault sits: the first broken edge of a cut, the in-place write, the statement whose value a later "
    "step reads with its graph, the rebinding, or the backward that adds into an uncleared .grad. The "
    "programs spell each fault several ways, and their harmless lines borrow the faults' words (an add_ "
    "on a value nothing saved, a no_grad block, a parameter rebound to itself, clearing without "
    "zero_grad): only torch's record tells them apart. A state carried in a list or a dict is bound by no "
    "name: e.made, the nodes a statement's operations recorded, tells which statement made what step 2 "
    "reaches. The grader's own audit (capstone.audit, crossings, checklist) is switched off while your "
    "function runs.",
    explain="Each fault leaves its own evidence in torch's record: a tensor the optimizer does not hold, a "
    "parameter the loss does not reach, a saved tensor whose version moved, a later step's loss that "
    "reaches an earlier graph, a .grad that was not empty when backward added into it. Asked in that "
    "order, they name the fault and its statement, given the one intent the audit assumes: each step "
    "differentiates its own step.",
    hints=(
        "Follow the checklist of section 2 in order and return at the first item that finds something: "
        "the optimizer's tensors, what step 1's loss reaches, stale saves before step 1's backward, graphs "
        "step 2 reaches, .grad before step 2's backward.",
        "The worked example's cells are the checklist as code: the identity test against run.held(), "
        "first_broken_edge(run.trace(1), name), e.stale before backward, run.bound_before(e, name) with "
        "nodes(run.loss(2)), and run.before(run.backward_event(2)).grads.",
        "A value bound before the loop (step 0) that step 2's loss reaches is a stale graph; one bound at "
        "step 1 is a carried state. A cut inside a with torch.no_grad() block is the no_grad encoder.",
    ),
)
def diagnose_program(case):
    return capstone.audit(case.fresh()["program"])
