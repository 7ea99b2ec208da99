"""The SIMD targets of the batched flows (frb.simd): the same results bit for bit under every
target this CPU supports, for every batch size, chunking and thread count; the choice at import
(FRB_CPU_TARGET) and at run time (frb.set_cpu_target)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import frb

TARGETS = frb.simd.supported_cpu_targets()


pytestmark = pytest.mark.usefixtures("restore_dispatch")


def _bodies(n, seed=3):
    """A mix of the paths of the flow: generic bodies, near the separatrix and near the axes,
    unsorted, equal and very unequal moments, short, long and negative steps."""
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, 3)) * 10.0 ** rng.uniform(-3, 3, size=(n, 1))
    inertia = rng.uniform(0.5, 3, size=(n, 3))
    h = rng.choice([0.01, 0.1, -0.3, 1.0, 2.0, 7.5, -40.0], size=n)
    m[0::11] = [1e-9, 1.0, 1e-9]                       # near the middle axis
    m[1::11] = [1.0, 1e-12, 1e-12]                     # near the smallest axis
    inertia[2::11] = [1.0, 2.0, 3.0]
    m[2::11] = [np.sqrt(1.0 / 2.0), 0.0, np.sqrt(1.0 / 2.0)] + np.array([0, 1e-13, 0])
    inertia[3::11] = [2.0, 2.0, 3.0]                  # symmetric body
    inertia[4::11] = [1e-4, 1.0, 1e4]                 # very unequal moments
    inertia[5::11] = inertia[5::11][:, ::-1]          # reversed order
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    return m, q, h, inertia


def _steps(m, q, h, inertia, quadrature, threads=1):
    Q = frb.quat_to_matrix(q)
    return (frb.quat_step(m, q, h, inertia, quadrature=quadrature, threads=threads)
            + frb.frb_step(m, Q, h, inertia, quadrature=quadrature, threads=threads)
            + frb.quat_step(np.asfortranarray(m), np.asfortranarray(q), h[0], inertia[0],
                            quadrature=quadrature, threads=threads))


def _assert_same(a, b):
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("quadrature", [0, 1, 3, 10])
def test_every_target_gives_the_baseline_bit_for_bit(quadrature):
    m, q, h, inertia = _bodies(301)
    frb.set_cpu_target("baseline")
    reference = _steps(m, q, h, inertia, quadrature)
    for target in TARGETS[1:]:
        frb.set_cpu_target(target)
        _assert_same(_steps(m, q, h, inertia, quadrature), reference)


@pytest.mark.parametrize("target", TARGETS)
def test_results_do_not_depend_on_batch_size_chunking_or_threads(target):
    frb.set_cpu_target(target)
    m, q, h, inertia = _bodies(45, seed=7)
    whole = frb.quat_step(m, q, h, inertia, threads=1)
    _assert_same(frb.quat_step(m, q, h, inertia, threads=2), whole)
    # every body alone (the one-body path), and the batch cut at every offset into two parts
    for b in range(len(m)):
        _assert_same(frb.quat_step(m[b], q[b], h[b], inertia[b]), (whole[0][b], whole[1][b]))
    for cut in (1, 7, 8, 9, 17, 30):
        parts = [frb.quat_step(m[s], q[s], h[s], inertia[s], threads=1)
                 for s in (slice(0, cut), slice(cut, None))]
        _assert_same([np.concatenate([p[i] for p in parts]) for i in (0, 1)], whole)


def test_integrate_exact_splitting_is_the_same_under_every_target():
    m, q, _, inertia = _bodies(37, seed=11)
    inertia = np.sort(inertia, axis=1)
    top = frb.torques.heavy_top(0.5, [0.0, 0.0, 0.3])
    frb.set_cpu_target("baseline")
    reference = frb.integrate(m, q, inertia, 0.05, 40, method="STRANG", torque=top)
    for target in TARGETS[1:]:
        frb.set_cpu_target(target)
        result = frb.integrate(m, q, inertia, 0.05, 40, method="STRANG", torque=top)
        np.testing.assert_array_equal(result.m, reference.m)
        np.testing.assert_array_equal(result.q, reference.q)


def test_default_target_is_the_best_the_cpu_supports():
    if os.environ.get("FRB_CPU_TARGET"):
        pytest.skip("FRB_CPU_TARGET is set")
    assert frb.cpu_dispatch() == TARGETS[-1]
    assert TARGETS[0] == "baseline" and set(TARGETS) <= set(frb.simd.CPU_TARGETS)


def test_set_cpu_target():
    assert frb.set_cpu_target("baseline") == "baseline" == frb.cpu_dispatch()
    assert frb.set_cpu_target(" AVX2 ".lower()) in TARGETS
    assert frb.set_cpu_target(None) == TARGETS[-1]
    for unsupported in frb.simd.CPU_TARGETS[len(TARGETS):]:
        with pytest.warns(RuntimeWarning, match=f"does not support the SIMD target '{unsupported}'"):
            assert frb.set_cpu_target(unsupported) == TARGETS[-1]
    with pytest.raises(ValueError, match="target must be one of baseline, avx2, avx512"):
        frb.set_cpu_target("sse9")
    with pytest.raises(TypeError, match="target must be one of"):
        frb.set_cpu_target(2)


def _import_with(value):
    env = dict(os.environ, FRB_CPU_TARGET=value)
    run = subprocess.run([sys.executable, "-W", "always", "-c",
                          "import frb; print(frb.cpu_dispatch())"],
                         env=env, capture_output=True, text=True, check=True)
    return run.stdout.strip(), run.stderr


@pytest.mark.parametrize("value", ["baseline", "avx2", "avx512", "AVX2", "turbo", ""])
def test_environment_variable_forces_a_target_or_warns(value):
    name, stderr = _import_with(value)
    wanted = value.lower()
    if wanted in TARGETS:
        assert name == wanted and "RuntimeWarning" not in stderr
    elif wanted in frb.simd.CPU_TARGETS:
        assert name == TARGETS[-1]
        assert f"FRB_CPU_TARGET={wanted}: this CPU does not support it" in stderr
    elif wanted:
        assert name == TARGETS[-1] and "is not one of baseline, avx2, avx512" in stderr
    else:
        assert name == TARGETS[-1] and "RuntimeWarning" not in stderr


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("where", [0, 5, 8, 13])
def test_a_bad_body_in_a_chunk_is_refused_by_name(target, where):
    """The batched check of a chunk (vectorised) refuses what the body-by-body check refuses,
    and names the body: each way an input can be wrong, at several places in the chunks."""
    frb.set_cpu_target(target)
    m, q, _, inertia = _bodies(16, seed=5)
    inertia = np.abs(inertia) + 1
    h = np.full(16, 0.1)
    tol = 1e-10
    cases = [("m", np.nan, "m"), ("m", np.inf, "m"), ("h", np.nan, "h"),
             ("inertia", 0.0, "inertia"), ("inertia", np.inf, "inertia"),
             ("q", 1.0 + 3 * tol, "unit quaternion"), ("q", np.nan, "q"),
             ("h", 1e18 * 3.0, "h")]
    for name, value, fragment in cases:
        args = {"m": m.copy(), "q": q.copy(), "h": h.copy(), "inertia": inertia.copy()}
        if name == "q" and np.isfinite(value):
            args["q"][where] *= value                  # |q| = 1 + 3 tol
        elif name == "h" and np.isfinite(value):
            args["m"][where] = [1.0, 1.0, 1.0]         # |h| |m| / I_min far beyond the limit
            args["h"][where] = value
        else:
            args[name][where] = value
        with pytest.raises(ValueError, match=rf"(?s)(?=.*{fragment})(?=.*body {where}\b)"):
            frb.quat_step(args["m"], args["q"], args["h"], args["inertia"])
    Q = frb.quat_to_matrix(q)
    for change, fragment in [(lambda A: A * (1.0 + 3 * tol), "rotation"),
                             (lambda A: A @ np.diag([1.0, 1.0, -1.0]), "rotation"),
                             (lambda A: np.where(np.eye(3) > 0, np.nan, A), "Q")]:
        bad = Q.copy()
        bad[where] = change(bad[where])
        with pytest.raises(ValueError, match=rf"(?s)(?=.*{fragment})(?=.*body {where}\b)"):
            frb.frb_step(m, bad, h, inertia)
    # just inside the tolerances: accepted, the same results as the bodies one by one
    inside = q.copy()
    inside[where] *= 1.0 + 0.5 * tol
    batch = frb.quat_step(m, inside, h, inertia)
    one = frb.quat_step(m[where], inside[where], h[where], inertia[where])
    np.testing.assert_array_equal(batch[1][where], one[1])
    near = Q.copy()
    near[where] *= 1.0 + 0.25 * tol
    batch = frb.frb_step(m, near, h, inertia)
    np.testing.assert_array_equal(batch[1][where], frb.frb_step(m[where], near[where], h[where],
                                                                inertia[where])[1])


def test_no_fused_multiply_add_in_the_extensions():
    """The bit-for-bit agreement of the targets rests on no multiply-add being fused (meson.build:
    -ffp-contract=off). GCC 12's vectoriser once fused products of an inlined matrix turn into
    vfmaddsub despite that flag: look for every fused instruction in the compiled code."""
    import shutil

    import glob
    import os

    import frb._core

    objdump = shutil.which("objdump")
    if objdump is None or not frb.simd.supported_cpu_targets()[1:]:
        pytest.skip("needs objdump, and an x86-64 CPU with the wider targets")
    # the extensions and the Fortran library they link, beside them in the package
    folder = os.path.dirname(frb._core.__file__)
    libraries = [p for p in glob.glob(os.path.join(folder, "*.so")) if os.path.isfile(p)]
    assert any("frb_fortran" in os.path.basename(p) for p in libraries), libraries
    for path in libraries:
        text = subprocess.run([objdump, "-d", "--no-show-raw-insn", path],
                              capture_output=True, text=True, check=True).stdout
        fused = [line for line in text.splitlines() if "\tvfm" in line or "\tvfnm" in line]
        assert not fused, f"{path}: {len(fused)} fused instructions, e.g. {fused[0]}"
