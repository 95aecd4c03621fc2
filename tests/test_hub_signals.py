"""The demo hub's start process (``python -m grader.instructor.hub start``, what ``make hub`` runs) stops cleanly on
SIGTERM and SIGHUP, as on Ctrl-C: under systemd, nohup or a supervisor it is stopped by SIGTERM, and before it had
no handler, so it died at once and left JupyterHub, the proxy and every user's server running (they run in a
session of their own). Here :func:`hub.serve` waits on a stand-in hub whose process is real."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from grader.instructor import hub


class StandIn:
    """What serve() needs of a Hub: a process that runs until stopped, and stop()."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        self.stopped = False

    def stop(self):
        self.stopped = True
        self.proc.kill()
        self.proc.wait()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_stop_the_hub_and_what_it_started(sig, capsys):
    reached = []
    before = signal.signal(sig, lambda *_: reached.append("no handler of serve's own"))  # never the test's death
    standin = StandIn()
    try:
        threading.Timer(0.3, os.kill, (os.getpid(), sig)).start()
        assert hub.serve(standin, poll=0.05) == 0
        assert standin.stopped and standin.proc.poll() is not None, "the hub (and with it every server) stopped"
        assert reached == [] and f"stopping ({sig.name})" in capsys.readouterr().out
        assert signal.getsignal(sig) is not hub._on_signal, "the handler before it is put back"
    finally:
        if standin.proc.poll() is None:
            standin.proc.kill()
        signal.signal(sig, before)


def test_a_hub_that_stops_by_itself_is_cleaned_up_too():
    standin = StandIn()
    standin.proc.kill()
    assert hub.serve(standin, poll=0.05) == 0 and standin.stopped
