import pytest


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """Every test gets its own progress store (and so its own learner identity) and starts outside strict mode."""
    monkeypatch.setenv("AUTOGRAD_LAB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("AUTOGRAD_LAB_STRICT", raising=False)
    # the learner's identity is the one kept beside that store (made on first use), the mastery setting the default
    for name in ("AUTOGRAD_LAB_LEARNER", "JUPYTERHUB_USER", "AUTOGRAD_LAB_MASTERY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


@pytest.fixture
def busy_machine():
    """Two CPU-bound processes running beside the test, as on a loaded CI machine; stopped afterwards."""
    import subprocess
    import sys

    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield
    finally:
        for p in spinners:
            p.kill()
            p.wait()


@pytest.fixture(scope="session")
def chromium():
    """One headless Chromium (Playwright's) for every browser test of this process; closed at the end of the session.
    Playwright's sync API runs one instance a thread: every test takes its pages from this one."""
    from tests.test_browser import chromium_browser

    with chromium_browser() as browser:
        yield browser


@pytest.fixture(scope="session")
def jupyterlab(chromium, tmp_path_factory):
    """One JupyterLab beside ``chromium`` for every browser test of this process (the browser modules run in one
    worker: conftest.py's BROWSER); each test gets a folder and a progress store of its own through the ``course``
    fixture. Started on first use, stopped at the end of the session."""
    from tests.test_browser import shared_lab

    with shared_lab(tmp_path_factory.mktemp("jupyterlab")) as lab:
        yield lab, chromium


@pytest.fixture
def course(jupyterlab, home, request):
    """A folder of this test's own on the one JupyterLab and Chromium every browser test of this process shares
    (``jupyterlab``: a server and a browser started once instead of once a test, about 6 CPU-s each), its kernels
    keeping this test's progress store (``home``). Every session is closed before and after, so each test starts
    its kernels afresh (tests/test_browser.py: Course)."""
    import contextlib

    from tests.test_browser import course_for

    shared = course_for(jupyterlab, home, request.node.name)
    shared.lab.delete_sessions()
    yield shared
    with contextlib.suppress(Exception):
        shared.lab.delete_sessions()
