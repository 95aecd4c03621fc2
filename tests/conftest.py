import pytest


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """Every test gets its own progress store and starts outside strict mode."""
    monkeypatch.setenv("AUTOGRAD_LAB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("AUTOGRAD_LAB_STRICT", raising=False)
    return tmp_path / "home"
