"""environment.yml wraps pyproject.toml's requirements, so the two cannot drift apart; the install takes
torch's CPU build and never waits long for an index that does not answer."""

import http.server
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import tomllib
import yaml

ROOT = Path(__file__).resolve().parent.parent
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def makefile_target(name: str) -> str:
    text = (ROOT / "Makefile").read_text()
    start = text.index(f"\n{name}:")
    end = text.find("\n\n", start + 1)
    return text[start : end if end > 0 else None]


def makefile_variable(name: str) -> str:
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    value = re.search(rf"^{name}\s*[:?]?=\s*(.*)$", text, re.M).group(1)
    return re.sub(r"\s+", " ", value).strip()


def test_environment_yml_wraps_pyproject():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = env["dependencies"]
    assert "python=3.11" in deps and "pip" in deps
    pip = next(d["pip"] for d in deps if isinstance(d, dict))
    assert pip[-1] == "-e .", "environment.yml installs the course alone, as make lab does (no test extra)"
    assert pip[:-1] == [f"--index-url {CPU_INDEX}", "--extra-index-url https://pypi.org/simple"], (
        "conda users get torch's CPU build too"
    )
    assert "configurable-http-proxy" not in deps, "a learner's environment has no hub"
    assert 'pip install -e ".[test]"' in (ROOT / "environment.yml").read_text(), "it says how to add the tests"
    assert project["requires-python"] == ">=3.10"


LEARNER_FREE = ("jupyterhub", "playwright", "ruff", "mypy", "pytest", "nbval", "import-linter")


def test_a_learners_install_is_the_course_and_make_test_gets_the_rest():
    """`make lab` installed the test extra (a hub, a browser driver, linters) on every learner's laptop."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    course = [re.split(r"[<>=\[ ]", d)[0] for d in project["dependencies"]]
    assert not set(course) & set(LEARNER_FREE), course
    extras = project["optional-dependencies"]
    assert any(d.startswith("jupyterhub") for d in extras["hub"])
    assert {re.split(r"[<>=]", d)[0] for d in extras["lint"]} == {"ruff", "mypy", "import-linter"}
    assert "autograd-lab[hub,lint]" in extras["test"], "the test extra takes the other two"
    assert {"pytest", "nbval", "playwright"} <= {re.split(r"[<>=]", d)[0] for d in extras["test"]}
    install = makefile_target("$(STAMP)")
    assert "$(call pip_install,-e .)" in install and "[test]" not in install
    assert '$(call pip_install,-e ".[test]")' in makefile_target("$(TEST_STAMP)")
    assert makefile_target("lab").split("\n")[1].split(":")[1].split() == ["install", "system-deps"]
    for name in ("test", "lint", "unit-tests", "nbval-solutions", "nbval-notebooks", "hub"):
        assert "test-install" in makefile_target(name).split("\n")[1].split(":")[1].split(), name


def test_torch_is_pinned_and_numpy_listed():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "torch==2.13.0" in project["dependencies"]
    assert "numpy" in project["dependencies"]


def test_conda_instructions_activate_the_environment():
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Two commands") : readme.index("## The learner's loop")]
    assert "conda env create -f environment.yml" in section and "conda activate autograd-lab" in section
    assert "conda activate autograd-lab" in (ROOT / "environment.yml").read_text()


def test_license_is_an_spdx_string_setuptools_accepts():
    """The license table made every install print setuptools' deprecation warning."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert data["project"]["license"] == "MIT"
    requires = data["build-system"]["requires"]
    assert requires == ["setuptools>=77"], "the SPDX string needs setuptools 77 or newer"


def test_the_editable_build_warns_of_nothing(tmp_path):
    """What `pip install -e .` runs, through setuptools' own hooks: no deprecation, no notice."""
    for name in ("pyproject.toml", "README.md"):
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    for package in ("grader", "grader/engine"):  # the version is read from grader/engine/course.py
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    course = ROOT / "grader" / "engine" / "course.py"
    (tmp_path / "grader" / "engine" / "course.py").write_bytes(course.read_bytes())
    probe = (
        "import sys, warnings\n"
        "import setuptools.build_meta as backend\n"
        "from setuptools.warnings import SetuptoolsWarning\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    backend.build_editable(sys.argv[1])\n"
        "print([str(w.message).split(chr(10))[0] for w in caught if issubclass(w.category, SetuptoolsWarning)])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "wheel")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-2000:]


def test_pytest_skips_the_learners_workspace():
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert ini["testpaths"] == ["tests"]
    assert "my-work" in ini["norecursedirs"]
    assert {".*", "build", "dist", "*.egg", "venv"} <= set(ini["norecursedirs"]), "pytest's defaults kept"


def test_install_asks_the_cpu_index_for_torch_as_ci_does():
    ci = (ROOT / ".github" / "workflows" / "test.yml").read_text()
    assert f"PIP_INDEX_URL: {CPU_INDEX}" in ci
    assert makefile_variable("TORCH_INDEX") == CPU_INDEX
    text = (ROOT / "Makefile").read_text()
    install = text[text.index("\ndefine pip_install") : text.index("\nendef")]
    assert '--index-url "$(TORCH_INDEX)"' in install and "--extra-index-url https://pypi.org/simple" in install
    assert '$(ANSWERS)\' "$(TORCH_INDEX)/torch/"' in install, "the index is asked first, briefly"
    # both branches install what they are called with; only the reachable one names the index
    assert install.count("pip install --quiet") == 2 and install.count(" $(1); ") == 2


class _Silent(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self):
        self.send_response(200 if self.path.endswith("/torch/") else 404)
        self.end_headers()

    def log_message(self, *args):
        pass


def _answers(url: str) -> tuple[int, float]:
    start = time.monotonic()
    code = subprocess.run([sys.executable, "-c", makefile_variable("ANSWERS"), url], timeout=60).returncode
    return code, time.monotonic() - start


def test_the_index_check_is_quick_and_decides():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Silent)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        assert _answers(f"http://127.0.0.1:{port}/whl/cpu/torch/")[0] == 0
        assert _answers(f"http://127.0.0.1:{port}/nothing/")[0] == 1
    finally:
        server.shutdown()
        server.server_close()
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        free = closed.getsockname()[1]
    assert _answers(f"http://127.0.0.1:{free}/torch/")[0] == 1
    # an index that accepts the connection and never answers: given up after 5 s, not pip's 180
    with socket.socket() as mute:
        mute.bind(("127.0.0.1", 0))
        mute.listen()
        code, took = _answers(f"http://127.0.0.1:{mute.getsockname()[1]}/torch/")
    assert code == 1 and took < 30, took


def test_ci_runs_make_test_and_nothing_else():
    lines = [l for l in (ROOT / ".ci" / "run").read_text().splitlines() if l.strip() and not l.startswith("#")]
    assert lines[-1] == "exec make test"


def test_make_lab_binds_localhost_with_a_token():
    text = (ROOT / "Makefile").read_text()
    lab = text[text.index("\nlab:") : text.index("\ntest:")]
    assert "--ServerApp.ip=127.0.0.1" in lab
    assert '--IdentityProvider.token="$$token"' in lab and "token_urlsafe" in lab
    assert "--allow-root" in lab and 'id -u)" = 0' in lab


def test_make_lab_opens_the_learners_workspace_after_checking_the_port():
    lab = makefile_target("lab")
    workspace = lab.index("-m grader workspace --port $(PORT) --print-dir")
    assert workspace < lab.index("token_urlsafe") < lab.index("echo"), "the port is checked before a URL is shown"
    assert "|| exit 1" in lab[workspace : lab.index("token_urlsafe")]
    assert '--ServerApp.root_dir="$$dir"' in lab and '"$$dir/00_start_here.ipynb"' in lab
    assert "$(CURDIR)" not in lab and "notebooks/" not in lab, "the learner never works in notebooks/"
    assert "/lab/tree/00_start_here.ipynb?token=" in lab


def test_the_hub_gets_its_proxy_locally_and_binds_loopback_only():
    """make hub and the hub test: JupyterHub from the test extra, its npm proxy under .hub/ (ignored),
    and every address on 127.0.0.1."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(d.startswith("jupyterhub") for d in project["optional-dependencies"]["hub"])
    assert "conda install -c conda-forge configurable-http-proxy" in (ROOT / "environment.yml").read_text()
    deps = makefile_target("hub-deps")
    assert "npm install --prefix .hub" in deps and "configurable-http-proxy@5" in deps
    assert "hub-deps" in makefile_target("test").strip().split("\n")[0]
    assert "-m grader.instructor.hub start" in makefile_target("hub")
    assert "/.hub/" in (ROOT / ".gitignore").read_text().split()
    config = (ROOT / "hub" / "jupyterhub_config.py").read_text()
    for setting in ("c.JupyterHub.bind_url", "c.JupyterHub.hub_bind_url", "c.ConfigurableHTTPProxy.api_url"):
        line = next(l for l in config.splitlines() if l.startswith(setting))
        assert '"http://127.0.0.1:' in line.replace('f"', '"'), line
