"""frb.compare / frb-compare on small problems: errors against references computed here
(the exact flow of frb.quat_step body by body; DOP853 for the heavy top), fitted orders, the
stated reference accuracy and the invariants."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import frb
from frb.cli import compare_main
from frb.reporting import fit_order
from frb.workprecision import random_bodies


def _rows(c, method):
    return [r for r in c.rows if r.method == method]


def test_free_body_errors_orders_and_invariants():
    c = frb.compare(["EXACT", "DMV4", "RK4", "IMID"], bodies=4, t_final=4.0, steps=(16, 32, 64),
                    min_time=0)
    m0, q0, I = random_bodies(4, 0)
    # reference computed here: one quat_step per body
    for j in range(4):
        m_ref, _ = frb.quat_step(m0[j], q0[j], 4.0, I[j])
        tr = frb.integrate(m0[j], q0[j], I[j], 4.0 / 64, 64, method="DMV4", save_every=64)
        e = np.linalg.norm(tr.m[-1] - m_ref) / np.linalg.norm(m_ref)
        assert e <= _rows(c, "DMV4")[-1].error_m * (1 + 1e-9)
    assert c.reference_accuracy < 1e-12
    assert all(r.error < 1e-12 for r in _rows(c, "EXACT"))
    for meth, order in (("DMV4", 4), ("RK4", 4), ("IMID", 2)):
        rows = _rows(c, meth)
        assert abs(fit_order([r.h for r in rows], [r.error_m for r in rows]) - order) < 0.3
        assert all(r.cost_ns > 0 for r in rows)
    # DMV and IMID keep energy and |m|; RK4 does not
    assert max(r.energy for r in _rows(c, "DMV4")) < 1e-13
    assert max(r.norm_m for r in _rows(c, "IMID")) < 1e-13
    assert _rows(c, "RK4")[0].energy > 1e-9
    assert c.invariants == ("energy", "|m|", "Qm")
    assert "DMV4" in c.to_markdown() and "reference: exact flow" in c.format()


def test_heavy_top_reference_against_dop853():
    top = frb.torques.heavy_top(1.0, (0.0, 0.0, 0.5))
    m0, I = np.array([0.3, -0.5, 0.8]), np.array([0.9, 1.3, 1.7])
    c = frb.compare(["RK4", "TRAPM"], torque=top, m0=m0, attitude0=np.eye(3), inertia=I,
                    t_final=2.0, steps=(20, 40, 80), min_time=0)

    def f(_, y):
        m, Q = y[:3], y[3:].reshape(3, 3)
        w = m / I
        W = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
        return np.concatenate([np.cross(m, w) + np.cross(Q[2, :], [0, 0, 0.5]), (Q @ W).ravel()])

    y = solve_ivp(f, (0, 2.0), np.concatenate([m0, np.eye(3).ravel()]), method="DOP853",
                  rtol=1e-13, atol=1e-15).y[:, -1]
    tr = frb.integrate(m0, np.eye(3), I, 2.0 / 80, 80, method="RK4", torque=top, save_every=80)
    e = np.linalg.norm(tr.m[-1] - y[:3]) / np.linalg.norm(y[:3])
    assert _rows(c, "RK4")[-1].error_m == pytest.approx(e, rel=1e-3)
    assert c.reference_accuracy < 1e-10
    assert c.invariants == ("energy", "Qm")
    assert max(r.momentum for r in _rows(c, "TRAPM")) < 1e-13   # vertical Qm kept
    best = c.best(1e-3)
    assert best is not None and best[0] in ("RK4", "TRAPM")


def test_methods_that_do_not_apply_and_bad_arguments():
    with pytest.raises(ValueError, match="EXACT does not apply"):
        frb.compare(["EXACT"], problem="heavy-top", bodies=2, steps=(4,))
    with pytest.raises(ValueError, match="unknown method"):
        frb.compare(["NOPE"], bodies=2, steps=(4,))
    with pytest.raises(ValueError, match="problem must be one of"):
        frb.compare(["RK4"], problem="moon", bodies=2, steps=(4,))
    c = frb.compare("all", problem="gravity-gradient", bodies=2, t_final=0.5, steps=(4,),
                    min_time=0)
    assert "EXACT" not in c.methods() and "NYSTROM4" not in c.methods()
    assert len(c.methods()) == 20 and c.invariants == ()


def test_cli(capsys, tmp_path):
    assert compare_main(["--methods", "DMV6,RK4", "--bodies", "3", "--steps", "8,16",
                         "--t-final", "1", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| method | n | h |") and "| DMV6 | 16 |" in out
    assert compare_main(["--methods", "RK4", "--inertia", "1,2,3"]) == 2
    assert "together" in capsys.readouterr().err
    pytest.importorskip("matplotlib")
    path = tmp_path / "wp.png"
    assert compare_main(["--methods", "RK4", "--bodies", "2", "--steps", "4,8", "--plot",
                         str(path)]) == 0
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_damped_problem_has_the_exact_flow_as_reference():
    c = frb.compare(["EXACT", "STRANG", "YOSHIDA4"], problem="damped", bodies=3, t_final=2.0,
                    steps=(8, 16), min_time=0)
    # the reference is EXACT in one step (damping alone: exact at any step), checked against
    # EXACT in 100 steps
    assert c.reference_accuracy < 1e-13
    err = {(r.method, r.nsteps): r.error_m for r in c.rows}
    assert err[("EXACT", 8)] < 1e-13 and err[("EXACT", 16)] < 1e-13
    assert 3.5 < err[("STRANG", 8)] / err[("STRANG", 16)] < 4.5
    assert 12 < err[("YOSHIDA4", 8)] / err[("YOSHIDA4", 16)] < 20


def test_gyrostat_problem_has_the_exact_flow_as_reference():
    c = frb.compare(["EXACT", "STRANG", "RK4"], problem="gyrostat", bodies=3, t_final=2.0,
                    steps=(8, 16), min_time=0)
    # the reference is EXACT in one step (the gyrostat's exact flow), checked against EXACT in
    # 100 steps; the splittings with a rotor alone are exact too (the gyrostat is their free part)
    assert c.reference_accuracy < 1e-13
    err = {(r.method, r.nsteps): r.error_m for r in c.rows}
    assert max(err[("EXACT", 8)], err[("EXACT", 16)], err[("STRANG", 8)]) < 1e-13
    assert 12 < err[("RK4", 8)] / err[("RK4", 16)] < 20
