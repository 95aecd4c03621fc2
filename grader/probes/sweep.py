"""Check claims on torch's operator database: which op_db programs each claim's sweep runs.

Three scopes:

* ``"all"`` (``grader verify``, ``make drift``, ``grader claims --check``): every operation of op_db that
  supports autograd (or the few a claim about particular operations names), in float64 and float32, on
  up to ``opdb.PER_OP`` samples each;
* ``"sample"`` (``make test``): the fixed list ``opdb.SAMPLE_OPS`` (or the claim's own operations that are
  in it, else its first one), plus any the claim names for it (``@sweeps(..., sample=...)``), on
  ``opdb.SAMPLE_PER_OP`` samples each, so that every swept claim runs in the suite at a small cost;
* ``"none"``: the generated programs alone (the sweep is skipped).

Where op_db cannot be imported (no ``expecttest``), a swept claim checked in scope "all" or "sample" is an
ERROR that says so: what was not run cannot be reported as holding.
"""

from __future__ import annotations

from typing import Literal

from grader.engine.claims import Claim, ClaimResult, Status, check_claim
from grader.probes import opdb

Scope = Literal["all", "sample", "none"]
SCOPES: tuple[Scope, ...] = ("all", "sample", "none")


def programs(c: Claim, scope: Scope) -> list[opdb.OpSample] | None:
    """The op_db programs claim ``c`` is swept on in ``scope`` (None: not swept)."""
    if not c.swept or scope == "none":
        return None
    if scope == "all":  # a rule about a few operations is swept on every sample they have
        if c.sweep_ops:
            return opdb.samples(c.sweep_ops, per_op=c.sweep_per_op)
        return opdb.samples(per_op=c.sweep_per_op or opdb.PER_OP)
    # the fixed sample: the rule's own operations that are in it (else its first one), on few samples each
    names = [n for n in c.sweep_ops if n in opdb.SAMPLE_OPS] or list(c.sweep_ops[:1]) or list(opdb.SAMPLE_OPS)
    names += [n for n in c.sweep_sample if n not in names]
    return opdb.samples(names, per_op=min(opdb.SAMPLE_PER_OP, c.sweep_per_op or opdb.SAMPLE_PER_OP))


def check(c: Claim, scope: Scope = "all") -> ClaimResult:
    """check_claim on the claim's generated programs and, for a swept claim, its op_db programs."""
    if c.swept and scope != "none":
        reason = opdb.unavailable()
        if reason:
            import torch

            return ClaimResult(c.cid, Status.ERROR, torch.__version__, problem=f"not swept: {reason}")
    return check_claim(c, programs(c, scope))
