import pytest


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """Every test gets its own progress store and starts outside strict mode."""
    monkeypatch.setenv("AUTOGRAD_LAB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("AUTOGRAD_LAB_STRICT", raising=False)
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
