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
