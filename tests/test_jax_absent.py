"""Without JAX: frb imports and works, and ``import frb.jax`` is an ImportError naming the extra
(JAX hidden from a fresh interpreter, whether or not it is installed)."""
import subprocess
import sys

CODE = """
import sys
sys.modules["jax"] = None          # import jax raises ImportError
import frb
m1, q1 = frb.quat_step([0.3, 0.5, 0.8], [1.0, 0.0, 0.0, 0.0], 0.1, [1.0, 2.0, 3.0])
assert "jax" not in [k for k, v in sys.modules.items() if v is not None]
try:
    import frb.jax
except ImportError as exc:
    print("ImportError:", exc)
"""


def test_frb_imports_without_jax_and_frb_jax_names_the_extra():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    assert "ImportError: frb.jax needs JAX: pip install 'frb[jax]'" in out.stdout, out.stderr
