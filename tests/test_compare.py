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


def _table(out: str) -> dict[tuple[str, int], float]:
    """(method, n) -> error m of the plain table frb-compare prints."""
    rows = {}
    for line in out.splitlines():
        cols = line.split()
        if len(cols) >= 4 and cols[0].isupper() and cols[1].isdigit():
            rows[cols[0], int(cols[1])] = float(cols[3])
    return rows


def _euler_solution(m0, inertia, t):
    """m(t) and Q(t) of a free body by DOP853 of m' = m x I^-1 m, Q' = Q hat(I^-1 m) (Q0 = 1)."""
    def rhs(_, y):
        m, Q = y[:3], y[3:].reshape(3, 3)
        w = m / inertia
        hat = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
        return np.concatenate([np.cross(m, w), (Q @ hat).ravel()])
    sol = solve_ivp(rhs, (0, t), np.concatenate([m0, np.eye(3).ravel()]), method="DOP853",
                    rtol=1e-13, atol=1e-15)
    return sol.y[:3, -1], sol.y[3:, -1].reshape(3, 3)


def test_cli_reference_file(capsys, tmp_path):
    # --reference: the errors are measured against the file's state. With the solution of DOP853
    # they are those against the exact flow (to its accuracy, 1e-12); with the momentum turned
    # by 1e-3 about axis 1 the exact flow's own error is that angle
    m0, inertia = np.array([0.3, -0.5, 0.8]), np.array([1.0, 2.0, 3.0])
    m_ref, Q_ref = _euler_solution(m0, inertia, 2.0)
    args = ["--methods", "EXACT,RK4", "--steps", "10,20", "--t-final", "2", "--m0", "0.3,-0.5,0.8",
            "--inertia", "1,2,3"]
    assert compare_main(args) == 0
    default = _table(capsys.readouterr().out)
    path = tmp_path / "ref.txt"
    path.write_text("# m and Q at t = 2 by DOP853\n"
                    + " ".join(repr(float(x)) for x in m_ref) + "\n"
                    + ", ".join(repr(float(x)) for x in Q_ref.ravel()) + "\n")
    assert compare_main(args + ["--reference", str(path)]) == 0
    out = capsys.readouterr().out
    assert "not estimated" in out
    mine = _table(out)
    assert mine.keys() == default.keys() and len(mine) == 4
    for key in (("RK4", 10), ("RK4", 20)):
        assert mine[key] == pytest.approx(default[key], rel=1e-3)
    assert mine["EXACT", 10] < 1e-11
    c, s = np.cos(1e-3), np.sin(1e-3)
    turned = np.array([[1, 0, 0], [0, c, -s], [0, s, c]]) @ m_ref
    q = frb.matrix_to_quat(Q_ref)
    np.savez(tmp_path / "ref.npz", m=turned, attitude=q)
    assert compare_main(args + ["--reference", str(tmp_path / "ref.npz")]) == 0
    assert _table(capsys.readouterr().out)["EXACT", 20] == pytest.approx(
        np.linalg.norm(turned - m_ref) / np.linalg.norm(m_ref), rel=1e-3)


def test_cli_reference_refuses_bad_files(capsys, tmp_path):
    args = ["--methods", "RK4", "--steps", "4", "--m0", "0.3,-0.5,0.8", "--inertia", "1,2,3"]
    cases = {"1 2 3\n": "two rows", "1 2 3\n1 0 0\n": "two rows", "1 2 x\n1 0 0 0\n": "line 1",
             "1 2 3\n2 0 0 0\n": "unit quaternions"}
    for text, message in cases.items():
        (tmp_path / "r.txt").write_text(text)
        assert compare_main(args + ["--reference", str(tmp_path / "r.txt")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("frb-compare: error:") and message in err, err
    np.savez(tmp_path / "r.npz", m=np.ones(3))
    assert compare_main(args + ["--reference", str(tmp_path / "r.npz")]) == 2
    assert "the arrays m and attitude" in capsys.readouterr().err
    assert compare_main(args + ["--reference", str(tmp_path / "none.txt")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert compare_main(["--methods", "RK4", "--reference", str(tmp_path / "r.txt")]) == 2
    assert "--m0" in capsys.readouterr().err


def test_cli_coefficients(capsys, tmp_path):
    # --coefficients: a named set or a file, compared as SPLITTING (on the heavy top: a free body
    # is split exactly at any step). Strang's coefficients from a file give STRANG's errors;
    # Yoshida's named set converges at order 4 (error ratio 2^4 at half the step), Strang at
    # order 2
    path = tmp_path / "strang.txt"
    path.write_text("# a_1 a_2\n0.5, 0.0\n# b_1\n0.5\n")
    base = ["--problem", "heavy-top", "--bodies", "2", "--steps", "16,32", "--t-final", "2"]
    assert compare_main(base + ["--methods", "STRANG,SPLITTING", "--coefficients", str(path)]) == 0
    rows = _table(capsys.readouterr().out)
    assert rows["SPLITTING", 16] == rows["STRANG", 16]
    assert rows["SPLITTING", 32] == rows["STRANG", 32]
    assert 3.5 < rows["SPLITTING", 16] / rows["SPLITTING", 32] < 4.5
    assert compare_main(base + ["--methods", "SPLITTING", "--coefficients", "yoshida4"]) == 0
    rows = _table(capsys.readouterr().out)
    assert 12 < rows["SPLITTING", 16] / rows["SPLITTING", 32] < 20
    for value, message in ((str(tmp_path / "none"), "no such file"), ("LEAPFROG", "one of")):
        assert compare_main(base + ["--coefficients", value]) == 2
        assert message in capsys.readouterr().err
    path.write_text("0.5 0.0\n")
    assert compare_main(base + ["--coefficients", str(path)]) == 2
    assert "two rows" in capsys.readouterr().err
    path.write_text("0.5 0.1\n0.5\n")             # a_1 + a_2 != 1
    assert compare_main(base + ["--coefficients", str(path)]) == 2
    assert "coefficients" in capsys.readouterr().err


def test_cli_help_names_coefficients_and_reference(capsys):
    with pytest.raises(SystemExit):
        compare_main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--coefficients NAME|FILE" in out and "--reference FILE" in out
    assert "RKN6_14, STRANG, YOSHIDA4" in out and "rotation matrix" in out


def test_a_batch_beyond_the_memory_is_refused_with_what_to_lower(capsys):
    """bodies that would not fit in memory: ValueError naming bodies (and saves only when above
    its default, which the command line cannot change), before any allocation."""
    with pytest.raises(ValueError, match=r"bodies = 2147483647: the runs would need about .* GiB, "
                                         r"more than the memory available .*compare fewer bodies$"):
        frb.compare(["RK4"], bodies=2**31 - 1, steps=(4,))
    with pytest.raises(ValueError, match=r"compare fewer bodies or keep fewer states \(saves = 1000\)"):
        frb.compare(["RK4"], bodies=2**31 - 1, steps=(4,), saves=1000)
    assert compare_main(["--methods", "RK4", "--bodies", str(2**31 - 1), "--steps", "4"]) == 2
    err = capsys.readouterr().err
    assert "--bodies = 2147483647: the runs would need" in err and "saves" not in err, err


def test_reference_accuracy_with_an_odd_number_of_reference_steps():
    # the reference's check (RKN6_14 with half as many steps) ends at t_final for an odd count of
    # reference steps too (15: a check of 7 steps), and so estimates a small error
    top = frb.torques.heavy_top(1.0, (0.0, 0.0, 0.5))
    for factor in (2, 3):
        c = frb.compare(["RK4"], torque=top, m0=[0.3, -0.5, 0.8], attitude0=np.eye(3),
                        inertia=[0.9, 1.3, 1.7], t_final=1.0, steps=(5,), ref_factor=factor,
                        min_time=0)
        assert c.reference_accuracy < 1e-9
