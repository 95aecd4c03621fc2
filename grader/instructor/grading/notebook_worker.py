"""The grading worker: runs one restored notebook headless and reports how it went through the result pipe.

Started by :func:`grader.instructor.grading.pipeline.execute` as a script (``python
grader/instructor/grading/notebook_worker.py NOTEBOOK WORKDIR CELL_TIMEOUT MEMORY_MB [CPU_S]``), not as
part of the ``grader`` package, so it never imports torch: the kernel does.
Its report says how the run went; verdicts are never its business.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any


def _containment():
    spec = importlib.util.spec_from_file_location("agl_containment", Path(__file__).with_name("containment.py"))
    if spec is None or spec.loader is None:
        raise ImportError("containment.py, beside this worker, cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


def run(notebook: str, workdir: str, cell_timeout: int, memory_mb: int, cpu_s: float = 0) -> None:
    """Inside the contained process: run the notebook; the report goes through the result pipe."""
    containment = _containment()
    fd = containment.result_pipe()
    if os.name == "posix":  # the kernel this process starts inherits the limits
        space = memory_mb + containment.AS_ALLOWANCE_MB if memory_mb else 0
        containment.set_limits(memory_mb, cpu_s, space)
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    report: dict[str, Any] = {"status": "ok", "problems": []}  # sent as one JSON line
    nb = nbformat.read(notebook, as_version=4)
    report["cells"] = len(nb.cells)
    running: list[int] = []  # the cell started last (named when the kernel dies in it)
    client = NotebookClient(
        nb,
        timeout=cell_timeout,
        kernel_name="python3",
        allow_errors=True,
        interrupt_on_timeout=True,
        record_timing=False,
        resources={"metadata": {"path": workdir}},
        on_cell_execute=lambda cell, cell_index: running.append(cell_index),
    )
    stream = os.environ.get(containment.EVENT_FD_VAR, "")
    try:  # the kernel inherits the event stream; the grader's store writes each event to it
        client.execute(**({"pass_fds": (int(stream),)} if stream.isdigit() else {}))
    except DeadKernelError:
        report["status"] = "kernel died"
        where = f"while {containment.cell_name(running[-1], nb.cells[running[-1]])} ran " if running else ""
        report["problems"].append(f"the kernel died {where}(a crash, os._exit, or memory)")
    except Exception as exc:
        report["status"] = "could not run"
        report["problems"].append(f"{type(exc).__name__}: {str(exc)[:200]}")
    for index, cell in enumerate(nb.cells):
        where = containment.cell_name(index, cell)
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.get("output_type") == "error":
                name = out.get("ename", "")
                if name == "KeyboardInterrupt":
                    report["problems"].append(f"{where} ran past {cell_timeout} s and was stopped")
                    if report["status"] == "ok":
                        report["status"] = "timed out"
                else:
                    report["problems"].append(f"{where} raised {name}: {str(out.get('evalue', ''))[:120]}")
                    if name == "MemoryError" or "can't allocate memory" in str(out.get("evalue", "")):
                        report["status"] = "out of memory"
                    elif report["status"] == "ok":
                        report["status"] = "cell errors"
    time.sleep(0.2)  # nbclient has shut the kernel down; anything else still alive was left behind
    report["leftovers"] = containment.others_alive()
    containment.send(fd, (json.dumps(report) + "\n").encode())


if __name__ == "__main__":
    sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
    run(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]) if len(sys.argv) > 5 else 0)
