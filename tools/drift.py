"""The course on another torch: a side environment, the live answers, strict nbval, a short report.

    make drift TORCH=2.15.0 [LIFT_CAP=1] [JOBS=2]
    python3 tools/drift.py 2.15.0 [--lift-cap] [--jobs 2] [--venv DIR] [--out FILE]

1. Builds `.venv-torch-<version>` next to `.venv` (reused when complete): torch==<version>, the
   course's other dependencies, nbval and pytest. The course itself is taken from this checkout
   (PYTHONPATH), so the side environment never needs rebuilding after an edit.
2. Before installing, reads pip's configuration (`pip config list`): when a constraints file it names
   caps torch below <version>, stops and says how to lift the cap. With --lift-cap (LIFT_CAP=1) it
   lifts it for its own pip calls only (PIP_CONSTRAINT=/dev/null), and says so.
3. Runs `python -m grader verify` (every live answer against solutions/manifest.json, every claim, the
   op-level ones swept over that torch's own op_db: the test extra brings expecttest) and strict nbval
   over solutions/ in the side environment.
4. Writes docs/drift/<version>.md: answers changed, experiments that now raise, cells that fail.
   Exits 1 when an experiment raises or a cell fails, 2 when the environment cannot be built.

Only the standard library is used, so any Python 3.10+ with venv can run it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAMP = ".drift-installed"
# Not needed to run solutions and verify: the browser test's driver.
SKIP_DEPS = {"playwright"}
NO_CAP = "/dev/null"  # an empty constraints file: what PIP_CONSTRAINT is set to when lifting a cap


# ----------------------------------------------------------------------------- versions and caps
def version_tuple(text: str) -> tuple[int, ...]:
    """'2.15.0' -> (2, 15, 0); a local label (+cpu) or pre-release tail is dropped."""
    parts = []
    for piece in re.split(r"[.+]", text.strip()):
        m = re.match(r"\d+", piece)
        if not m:
            break
        parts.append(int(m.group()))
        if m.group() != piece:
            break
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)


def allows(spec: str, version: str) -> bool:
    """Whether a requirement's specifier ('<=2.14.1', '>=2.0,<2.15', '==2.13.*') admits version."""
    v = version_tuple(version)
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        m = re.match(r"(===|==|!=|<=|>=|~=|<|>)\s*(\S+)$", clause)
        if not m:
            continue
        op, target = m.groups()
        if target.endswith(".*"):
            prefix = version_tuple(target[:-2])[: len(target[:-2].split("."))]
            same = v[: len(prefix)] == prefix
            if (op in ("==", "===") and not same) or (op == "!=" and same):
                return False
            continue
        t = version_tuple(target)
        ok = {
            "==": v == t,
            "===": v == t,
            "!=": v != t,
            "<=": v <= t,
            ">=": v >= t,
            "<": v < t,
            ">": v > t,
            "~=": v >= t and v[: max(1, len(target.split(".")) - 1)] == t[: max(1, len(target.split(".")) - 1)],
        }[op]
        if not ok:
            return False
    return True


def constraint_files(config_list: str, environ: dict) -> list[tuple[str, str]]:
    """(where it is named, path) for every constraints file pip's configuration names.

    ``config_list`` is the output of `pip config list`; PIP_CONSTRAINT in the environment overrides
    the files' setting, as it does for pip itself.
    """
    if environ.get("PIP_CONSTRAINT", "").strip():  # pip ignores an empty PIP_CONSTRAINT
        return [("PIP_CONSTRAINT", p) for p in environ["PIP_CONSTRAINT"].split()]
    out = []
    for line in config_list.splitlines():
        m = re.match(r"([^=\s]*)\.constraint='(.*)'$", line.strip())
        if m:
            out += [(f"{m.group(1)}.constraint", p) for p in m.group(2).split()]
    return out


def torch_caps(text: str) -> tuple[list[str], list[str]]:
    """(torch requirement lines, comment lines) of a constraints file."""
    reqs, comments = [], []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            comments.append(s)
        elif re.match(r"torch\s*(\[.*\])?\s*[<>=!~]", s):
            reqs.append(s.split("#")[0].strip())
    return reqs, comments


def find_cap(version: str, config_list: str, environ: dict) -> list[dict]:
    """Every constraint in pip's configuration that refuses torch==version."""
    caps = []
    for where, path in constraint_files(config_list, environ):
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError:
            continue
        reqs, comments = torch_caps(text)
        for req in reqs:
            spec = re.sub(r"^torch\s*(\[.*\])?", "", req).split(";")[0].strip()
            if not allows(spec, version):
                caps.append({"where": where, "path": path, "requirement": req, "comments": comments})
    return caps


def cap_message(version: str, caps: list[dict]) -> str:
    lines = [f"pip's configuration caps torch below {version}, so pip would refuse torch=={version}:"]
    for c in caps:
        lines.append(f"  {c['path']} (named by {c['where']} in `pip config list`): {c['requirement']}")
        lines += [f"    {comment}" for comment in c["comments"]]
    lines += [
        "To lift the cap, either",
        f"  make drift TORCH={version} LIFT_CAP=1     (lifts it for this side environment's pip calls only:",
        "                                          they run with PIP_CONSTRAINT=/dev/null, an empty constraints file)",
        f"  PIP_CONSTRAINT=/dev/null make drift TORCH={version}     (the same, by hand)",
        "or lift it for every pip on this machine: remove the constraint line above, or the configuration",
        "  that names it (`pip config list` shows where; on these machines `rm -r /etc/xdg/pip`).",
    ]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- the side environment
def course_requirements(version: str) -> list[str]:
    """torch==version plus the course's other dependencies and its test tools (pyproject.toml)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    deps = []
    for key in ("dependencies", "test"):
        m = re.search(rf"^{key}\s*=\s*\[(.*?)^\]", text, re.S | re.M)  # up to the list's own closing line
        if m:
            deps += re.findall(r'"([^"]+)"', m.group(1))
    name = lambda req: re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0].lower()
    # the test extra names the hub and lint extras through the project itself: not needed to run solutions
    deps = [d for d in deps if name(d) not in SKIP_DEPS | {"torch", "autograd-lab"}]
    if version_tuple(version) < (2, 3, 0):
        # torch before 2.3 was built against NumPy 1 and warns on stderr at import under NumPy 2
        deps = [d for d in deps if name(d) != "numpy"] + ["numpy<2"]
    return [f"torch=={version}", *deps]


def run(cmd: list[str], env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    print("$ " + " ".join(shlex.quote(str(c)) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], env=env, text=True, **kw)


def build_env(venv: Path, version: str, python: str, lift_cap: bool) -> dict:
    """Creates or reuses the side environment; returns facts for the report. Exits 2 on failure."""
    reqs = course_requirements(version)
    stamp = venv / STAMP
    py = venv / "bin" / "python"
    facts = {"venv": venv.name, "reused": False, "install_s": 0.0, "cap": None, "lifted": False}
    if not py.exists():
        run([python, "-m", "venv", venv], check=True)
    (venv / ".gitignore").write_text("*\n")  # never committed, whatever the repository's .gitignore says
    config = run([py, "-m", "pip", "config", "list"], capture_output=True).stdout
    caps = find_cap(version, config, os.environ)
    env = dict(os.environ)
    if caps:
        facts["cap"] = "; ".join(f"{c['path']}: {c['requirement']}" for c in caps)
        if not lift_cap:
            print("\n" + cap_message(version, caps), file=sys.stderr)
            sys.exit(2)
        env["PIP_CONSTRAINT"] = NO_CAP
        facts["lifted"] = True
        print(
            f"\nLIFT_CAP=1: you asked to lift pip's cap ({facts['cap']}) for this side environment only;\n"
            f"its pip calls run with PIP_CONSTRAINT={NO_CAP}. Nothing else on this machine changes.\n",
            flush=True,
        )
    if stamp.exists() and stamp.read_text(encoding="utf-8") == "\n".join(reqs) + "\n":
        facts["reused"] = True
    else:
        start = time.monotonic()
        done = run([py, "-m", "pip", "install", "--progress-bar", "off", *reqs], env=env)
        facts["install_s"] = time.monotonic() - start
        if done.returncode:
            print(
                f"\npip could not install torch=={version} and the course's dependencies into {venv}.", file=sys.stderr
            )
            if not caps:
                print(
                    "If pip names a constraint in its error, see `pip config list`; "
                    "`make drift ... LIFT_CAP=1` lifts a torch cap for this environment.",
                    file=sys.stderr,
                )
            sys.exit(2)
        stamp.write_text("\n".join(reqs) + "\n", encoding="utf-8")
    probe = run([py, "-c", "import sys, torch; print(torch.__version__, sys.version.split()[0])"], capture_output=True)
    facts["torch"], facts["python"] = (probe.stdout.split() + ["?", "?"])[:2]
    du = run(["du", "-sm", venv], capture_output=True).stdout.split()
    facts["size_gb"] = round(int(du[0]) / 1024, 1) if du else None
    return facts


# ----------------------------------------------------------------------------- the checks
def course_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("AUTOGRAD_LAB_STRICT", None)
    return env


def verify(py: Path, home: Path) -> dict:
    """`python -m grader verify --json` in the side environment; {'ok', 'report' or 'stderr', 'seconds'}."""
    env = course_env()
    env["AUTOGRAD_LAB_HOME"] = str(home)
    start = time.monotonic()
    done = run([py, "-m", "grader", "verify", "--json", "--allow-changes"], env=env, cwd=ROOT, capture_output=True)
    seconds = time.monotonic() - start
    try:
        return {"ok": True, "report": json.loads(done.stdout), "stderr": done.stderr, "seconds": seconds}
    except json.JSONDecodeError:
        return {"ok": False, "stderr": (done.stderr or done.stdout)[-3000:], "seconds": seconds}


FULL = """
import json, sys
from grader.instructor.manifest import answer_of, load
from grader.engine.question import get
old = load()["questions"]
print(json.dumps({qid: {"old": old[qid]["answer"], "new": answer_of(get(qid))[0]} for qid in sys.argv[1:]}))
"""


def full_answers(py: Path, home: Path, ids: list[str]) -> dict:
    """The whole old and new answers of changed questions whose short texts agree (an error's full message)."""
    if not ids:
        return {}
    env = course_env()
    env["AUTOGRAD_LAB_HOME"] = str(home)
    done = run([py, "-c", FULL, *ids], env=env, cwd=ROOT, capture_output=True)
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {}


def nbval(py: Path, jobs: int, junit: Path) -> dict:
    """Strict nbval over solutions/; {'passed', 'failed', 'skipped', 'cells': [failing cells], 'seconds'}."""
    cmd = [
        py,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--nbval",
        "--nbval-current-env",
        "--nbval-sanitize-with",
        "tests/nbval_sanitize.cfg",
        f"--junitxml={junit}",
    ]
    cmd += ["-n", str(jobs), "--dist", "loadscope"] if jobs > 1 else ["-p", "no:xdist"]
    start = time.monotonic()
    done = run([*cmd, "solutions"], env=course_env(), cwd=ROOT)  # pytest's progress goes to the terminal
    seconds = time.monotonic() - start
    result = {"passed": 0, "failed": 0, "skipped": 0, "cells": [], "seconds": seconds}
    if not junit.exists():
        result["failed"] = 1
        result["cells"].append(
            {
                "notebook": "(pytest)",
                "cell": "",
                "kind": "did not run",
                "detail": f"pytest exited {done.returncode} without a result; its output is above",
            }
        )
        return result
    for case in ET.parse(junit).getroot().iter("testcase"):
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if case.find("skipped") is not None:
            result["skipped"] += 1
        elif problem is None:
            result["passed"] += 1
        else:
            result["failed"] += 1
            text = (problem.text or problem.get("message") or "").strip()
            kind = "output changed" if "outputs differ" in text or "store:" in case.get("name", "") else "raised"
            where = re.search(r"[\w.-]+?(?=\.ipynb)", case.get("classname", "") + " " + (case.get("file") or ""))
            result["cells"].append(
                {
                    "notebook": where.group().split(".")[-1] if where else case.get("classname", ""),
                    "file": case.get("file") or case.get("classname", ""),
                    "cell": case.get("name", ""),
                    "kind": kind,
                    "detail": shorten(text),
                }
            )
    return result


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else "no output")[:300].replace("|", "\\|")


def shorten(text: str, lines: int = 24) -> str:
    keep = [line.rstrip() for line in text.splitlines() if line.strip()]
    keep = [re.sub(r"(\x1b|#x1B)\[[0-9;]*m", "", line) for line in keep]
    return "\n".join(keep[:lines] + (["..."] if len(keep) > lines else []))


# ----------------------------------------------------------------------------- the report
def claims_summary(r: dict) -> str:
    """'139 claims checked on this torch, 48 of them also over op_db (481 operations, 130,000 programs): 0 no
    longer hold'; a grader from before the sweep reports no 'ops'."""
    rows = r.get("claims", [])
    text = f"{len(rows)} claims checked on this torch"
    swept = [row for row in rows if row.get("ops")]
    if swept:
        ops = max(row["ops"] for row in swept)
        programs = sum(row.get("programs", 0) for row in swept)
        text += f", {len(swept)} of them also over op_db (up to {ops} operations, {programs:,} programs)"
    return text + f": {len(r.get('claims_failed', []))} no longer hold"


def report(version: str, facts: dict, ver: dict, nb: dict, command: str, total_s: float) -> str:
    out = [f"# The course on torch {version}", ""]
    out.append(
        f"Measured {date.today().isoformat()} with `{command}` ({total_s / 60:.1f} min in all): "
        f"torch {facts['torch']} on Python {facts['python']}, {platform.machine()} CPU, "
        f"side environment `{facts['venv']}` ({facts['size_gb']} GB"
        + (", reused" if facts["reused"] else f", installed in {facts['install_s'] / 60:.1f} min")
        + ")."
    )
    if facts["cap"]:
        out.append(
            f"pip's configuration capped torch here ({facts['cap']}); "
            + (
                "it was lifted for this side environment only because LIFT_CAP=1 asked for it."
                if facts["lifted"]
                else "the cap did not refuse this version."
            )
        )
    out.append("Regenerate with the same command; the report describes the content of the checkout it ran on.")
    out.append("")
    if ver["ok"]:
        r = ver["report"]
        answers = (
            f"{len(r['rows'])} experiments against the manifest built with torch {r['built_with']}: "
            f"{len(r['changed'])} changed, {len(r['errors'])} raise, "
            f"{len(r['added'])} added and {len(r['removed'])} removed since the manifest"
        )
        claims_line = claims_summary(r)
    else:
        answers = f"**the grader did not run**: `{last_line(ver['stderr'])}` (traceback below)"
        claims_line = "not checked"
    failing = nb["failed"]
    cells = f"{nb['passed']} passed, {failing} failed" + (f", {nb['skipped']} skipped" if nb["skipped"] else "")
    cells = nb.get("not_run") or cells
    holds = ver["ok"] and not ver["report"]["errors"] and not failing
    changed = len(ver["report"]["changed"]) if ver["ok"] else 0
    broken = len(ver["report"].get("claims_failed", [])) if ver["ok"] else 0
    if not holds:
        verdict = f"the course does not hold on torch {version}"
    elif broken:
        verdict = f"{broken} claim(s) the prose states no longer hold on torch {version}: rewrite those sentences"
    elif changed:
        verdict = (
            f"{changed} live answer(s) differ from the manifest: the prose and stored outputs describe "
            f"torch {ver['report']['built_with']}"
        )
    elif nb.get("not_run"):
        verdict = "the live answers hold; nbval was not run"
    else:
        verdict = f"the course holds on torch {version}"
    out += [
        "| check | result |",
        "|---|---|",
        f"| live answers: `python -m grader verify` ({ver['seconds']:.0f} s) | {answers} |",
        f"| claims (the rules the prose states) | {claims_line} |",
        "| strict nbval over `solutions/`"
        + (f" ({nb['seconds'] / 60:.1f} min)" if nb["seconds"] else "")
        + f" | {cells} |",
        f"| verdict | {verdict} |",
        "",
    ]
    if not ver["ok"]:
        trace = ver["stderr"].strip()[-2500:].replace(str(ROOT) + os.sep, "")
        trace = re.sub(r'File "[^"]*/(site-packages|lib/python[\d.]+)/', r'File ".../\1/', trace)
        out += ["## The grader did not run", "", "```", trace, "```", ""]
    else:
        r = ver["report"]
        out += ["## Answers changed since the manifest", ""]
        for c in r["changed"]:
            out.append(f"- `{c['id']}`: {c['old']} -> {c['new']}")
            full = ver.get("full", {}).get(c["id"])
            if c["old"] == c["new"] and full:
                old, new = full["old"], full["new"]
                if isinstance(old, dict) and isinstance(new, dict) and "message" in old and "message" in new:
                    old, new = old["message"], new["message"]
                out += [
                    f"  - was: {json.dumps(old, ensure_ascii=False)[:600]}",
                    f"  - now: {json.dumps(new, ensure_ascii=False)[:600]}",
                ]
        out += [] if r["changed"] else ["None."]
        out.append("")
        out += ["## Experiments that now raise", ""]
        rows = {row["id"]: row for row in r["rows"]}
        out += [f"- `{qid}`: {rows[qid]['error'][:400]}" for qid in r["errors"]] or ["None."]
        out.append("")
        out += ["## Claims", ""]
        for row in r.get("claims", []):
            mark = "holds" if row["ok"] else "**no longer holds**"
            out.append(f"- `{row['id']}` ({mark}): {row['sentence']} — {row['result']}")
            for kind, what in (
                ("broken", "broken on"),
                ("counterexamples", "counter-examples outside its condition on"),
            ):
                found = row.get(kind)
                if isinstance(found, dict) and found.get("ops"):
                    names = ", ".join(found["ops"][:15]) + (", ..." if len(found["ops"]) > 15 else "")
                    out.append(f"  - {what} {len(found['ops'])} op_db operation(s): {names}")
        out += [] if r.get("claims") else ["None checked (a grader older than claims)."]
        out.append("")
        if r["added"] or r["removed"]:
            out += ["## Questions added or removed since the manifest", ""]
            out += [f"- added: {', '.join(r['added'])}"] if r["added"] else []
            out += [f"- removed: {', '.join(r['removed'])}"] if r["removed"] else []
            out.append("(the manifest is older than the content: run `python -m grader build` on the pinned torch)")
            out.append("")
    out += ["## Cells that fail under strict nbval", ""]
    if not nb["cells"]:
        out += [nb.get("not_run", "None.").capitalize() + ("" if "not_run" not in nb else "."), ""]
    for c in nb["cells"]:
        out += [
            f"- `{c['notebook']}` {c['cell']}: {c['kind']}",
            "",
            "  ```",
            *[f"  {line}" for line in c["detail"].splitlines()],
            "  ```",
            "",
        ]
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("version", help="the torch release to try, e.g. 2.15.0")
    parser.add_argument(
        "--lift-cap", action="store_true", help="lift a torch cap in pip's configuration for this side environment only"
    )
    parser.add_argument("--jobs", type=int, default=1, help="nbval workers (pytest-xdist); default 1")
    parser.add_argument(
        "--python",
        default=os.environ.get("PYTHON", sys.executable),
        help="the Python that creates the side environment",
    )
    parser.add_argument("--venv", help="the side environment (default .venv-torch-<version>)")
    parser.add_argument("--out", help="the report (default docs/drift/<version>.md)")
    parser.add_argument("--skip-nbval", action="store_true", help="only the live answers (a quick look)")
    args = parser.parse_args(argv)
    version = args.version.strip()
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?", version):
        parser.error(f"{version!r} is not a release number like 2.15.0")
    start = time.monotonic()
    venv = Path(args.venv) if args.venv else ROOT / f".venv-torch-{version}"
    facts = build_env(venv, version, args.python, args.lift_cap)
    py = venv / "bin" / "python"
    with tempfile.TemporaryDirectory(prefix="agl-drift-") as tmp:
        print(f"\ntorch {facts['torch']}: the live answers (grader verify) ...", flush=True)
        ver = verify(py, Path(tmp) / "home")
        if ver["ok"]:
            r = ver["report"]
            print(f"  {len(r['rows'])} experiments: {len(r['changed'])} changed, {len(r['errors'])} raise")
            same = [c["id"] for c in r["changed"] if c["old"] == c["new"]]
            ver["full"] = full_answers(py, Path(tmp) / "home", same)
        else:
            print("  the grader did not run:\n" + ver["stderr"][-1500:])
        if args.skip_nbval or not ver["ok"]:
            # without a working grader every notebook fails at its first cell: minutes spent for nothing
            nb = {
                "passed": 0,
                "failed": 0,
                "skipped": 0,
                "cells": [],
                "seconds": 0.0,
                "not_run": "not run (--skip-nbval)"
                if args.skip_nbval
                else "not run: the grader does not run on this torch, so every notebook would stop at its first cell",
            }
        else:
            print(f"torch {facts['torch']}: strict nbval over solutions/ ...", flush=True)
            nb = nbval(py, args.jobs, Path(tmp) / "junit.xml")
            print(f"  {nb['passed']} cells passed, {nb['failed']} failed")
    command = (
        f"make drift TORCH={version}"
        + (" LIFT_CAP=1" if facts["lifted"] else "")
        + (f" JOBS={args.jobs}" if args.jobs > 1 else "")
    )
    if args.skip_nbval:
        command = f"python3 tools/drift.py {version} --skip-nbval" + (" --lift-cap" if facts["lifted"] else "")
    text = report(version, facts, ver, nb, command, time.monotonic() - start)
    out = Path(args.out) if args.out else ROOT / "docs" / "drift" / f"{version}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"\nwrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    bad = (not ver["ok"]) or ver["report"]["errors"] or nb["failed"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
