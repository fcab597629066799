"""`pip install` of this folder works offline, as the README says: into a venv that sees Debian's packages
(python3-kubernetes, python3-websocket, python3-setuptools), with no build isolation and no index."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from dockside import __version__

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)


def venv_unavailable():
    """Why no venv with pip can be made here ("" when one can): Debian splits venv and ensurepip into
    python3-venv."""
    try:
        import ensurepip  # noqa: F401
        import venv  # noqa: F401
    except ImportError as exc:
        return f"{exc}: install Debian's python3-venv"
    return ""


NO_VENV = venv_unavailable()


@unittest.skipIf(NO_VENV, NO_VENV)
class InstallTest(unittest.TestCase):
    def test_pip_installs_the_package_offline_and_it_imports_with_its_version(self):
        for module, package in (("setuptools", "python3-setuptools"), ("wheel", "python3-wheel")):
            try:
                __import__(module)
            except ImportError:
                self.fail(f"building the package needs {module}: apt-get install {package}")
        work = tempfile.mkdtemp(prefix="dockside-install-")
        self.addCleanup(shutil.rmtree, work)
        # A copy: setuptools builds in the source tree (build/, *.egg-info), which must stay clean.
        src = os.path.join(work, "src")
        os.mkdir(src)
        for name in ("pyproject.toml", "README.md", "dockside"):
            copy = shutil.copytree if os.path.isdir(os.path.join(SOURCE, name)) else shutil.copy
            copy(os.path.join(SOURCE, name), os.path.join(src, name))
        env = os.path.join(work, "venv")
        self.run_ok(sys.executable, "-m", "venv", "--system-site-packages", env)
        python = os.path.join(env, "bin", "python")
        self.run_ok(python, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-cache-dir", "--quiet",
                    src)
        out = self.run_ok(python, "-c", "import dockside, os; print(dockside.__version__, os.path.dirname(dockside.__file__))",
                          cwd=work)
        version, where = out.split()
        self.assertEqual(version, __version__)
        self.assertTrue(where.startswith(env), f"imported from {where}, not the venv")
        self.assertTrue(os.path.isfile(os.path.join(where, "py.typed")), "the installed package says it is typed")
        out = self.run_ok(python, "-m", "pip", "show", "dockside")
        self.assertIn("Requires: kubernetes, websocket-client", out)

    def run_ok(self, *argv, cwd=None):
        env = dict(os.environ, PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYTHONPATH", None)
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, f"{' '.join(argv)}:\n{proc.stdout}{proc.stderr}")
        return proc.stdout


if __name__ == "__main__":
    unittest.main()
