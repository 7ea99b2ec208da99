"""The figures of the experiments (frb.experiments.*.plot through plot_experiment): the curves drawn
are the quantities of the run, each recomputed here from the run's data with numpy formulas
written in the test (largest differences of the body axes, errors of the fitted moments, the 95 %
ellipse of a covariance against the chi-square quantile of scipy, a histogram, the normalised
energy), and the file written is a PNG. The figure is taken from the experiment's call of
save_figure (which then writes it as usual)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from frb.experiments import (inertia_identification, krysl_coulomb, satellite,  # noqa: E402
                             vilmart_book)
from frb.experiments import plot_experiment, run_experiment  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _plot(result, module, tmp_path, monkeypatch):
    """The figure plot_experiment draws for result (module's plot), and the file it writes."""
    figures = []
    original = module.save_figure

    def keep(fig, path, *args, **kwargs):
        figures.append(fig)
        original(fig, path, *args, **kwargs)

    monkeypatch.setattr(module, "save_figure", keep)
    path = plot_experiment(result, tmp_path / "figure.png")
    with open(path, "rb") as f:
        assert f.read(8) == PNG_MAGIC
    assert len(figures) == 1
    return figures[0]


def test_vilmart_book_figure_draws_the_axes_and_their_difference(tmp_path, monkeypatch):
    r = run_experiment("vilmart-book", t_final=2.0)
    fig = _plot(r, vilmart_book, tmp_path, monkeypatch)
    ax3d, ax = fig.axes
    d = r.data
    # the exact body axes: columns of rotations, on the unit sphere
    for j, line in enumerate(ax3d.get_lines()[::2]):
        x, y, z = line.get_data_3d()
        assert np.allclose(np.stack([x, y, z], axis=1), d["Q_exact"][:, :, j], rtol=0, atol=0)
        assert np.abs(x * x + y * y + z * z - 1).max() < 1e-13
    (curve,) = ax.get_lines()
    diff = np.abs(d["Q_dmv"] - d["Q_exact"]).reshape(len(d["t"]), 9).max(axis=1)
    assert np.array_equal(curve.get_xdata(), d["t"][1:])
    assert np.allclose(curve.get_ydata(), diff[1:], rtol=1e-15, atol=0)


def test_krysl_coulomb_figure_groups_the_methods_and_normalises_the_energy(tmp_path, monkeypatch):
    methods = ("AKW", "IMID", "RKN6_14")
    r = run_experiment("krysl-coulomb", nsteps=200, methods=",".join(methods))
    fig = _plot(r, krysl_coulomb, tmp_path, monkeypatch)
    for ax, group in zip(fig.axes, (krysl_coulomb.FIG4, krysl_coulomb.FIG5,
                                    krysl_coulomb.SPLITTINGS)):
        lines = ax.get_lines()
        shown = [m for m in group if m in methods]
        assert [t.get_text() for t in ax.get_legend().get_texts()] == shown
        for meth, line in zip(shown, lines):
            y = np.asarray(line.get_ydata())
            assert y[0] == 1.0                       # H / H0 at t = 0
            assert np.array_equal(y, r.data["H"][meth])
            assert np.abs(y - 1).max() < 0.5         # bounded energy error of these methods


def test_krysl_coulomb_figure_with_panels_left_empty(tmp_path, monkeypatch):
    r = run_experiment("krysl-coulomb", nsteps=20, methods="STRANG")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = _plot(r, krysl_coulomb, tmp_path, monkeypatch)
    assert [len(ax.get_lines()) for ax in fig.axes] == [0, 0, 1]
    assert [ax.get_legend() is None for ax in fig.axes] == [True, True, False]


def test_inertia_identification_figure_errors_and_ellipse(tmp_path, monkeypatch):
    r = run_experiment("inertia-identification", n=60, trials=4)
    fig = _plot(r, inertia_identification, tmp_path, monkeypatch)
    d = r.data
    truth = np.asarray(d["truth"])
    _, ax_err, ax_ratio = fig.axes
    curves = ax_err.get_lines()
    for name, line in zip(("exact", "fd"), curves):
        history = np.asarray(d["history"][name])
        assert np.allclose(line.get_ydata(), np.abs(history - truth).max(axis=1), rtol=1e-15,
                           atol=0)
    # the formal standard deviation drawn as a horizontal line
    sd_line = curves[2]
    assert np.allclose(sd_line.get_ydata(), np.sqrt(np.diag(d["covariance"])).max())
    # the ellipse: (p - truth)^T C^-1 (p - truth) = chi-square(2) quantile of 95 %
    chi2 = pytest.importorskip("scipy.stats").chi2.ppf(0.95, 2)
    ellipse = ax_ratio.get_lines()[-1]
    p = np.stack([ellipse.get_xdata(), ellipse.get_ydata()]) - truth[:, None]
    form = np.einsum("in,ij,jn->n", p, np.linalg.inv(d["covariance"]), p)
    assert np.allclose(form, chi2, rtol=1e-3, atol=0)    # 5.991 in the module, 5.9915 exact
    assert np.array_equal(ax_ratio.get_lines()[1].get_xydata()[0], truth)


def test_satellite_figure_histogram_limits_and_error(tmp_path, monkeypatch):
    r = run_experiment("satellite", h=1.0, coast=100.0, detumble=900.0, slew=1200.0)
    fig = _plot(r, satellite, tmp_path, monkeypatch)
    d = r.data
    axes = np.array(fig.axes).reshape(2, 4)
    assert np.array_equal(axes[0, 0].get_lines()[0].get_ydata(), d["error"])
    settle = np.asarray(d["settling"])
    counts, _ = np.histogram(settle[np.isfinite(settle)], bins=40)
    assert [p.get_height() for p in axes[0, 3].patches] == counts.tolist()
    u_max, rpm_max = d["limits"]
    for ax, limit in ((axes[1, 0], rpm_max), (axes[1, 1], u_max)):
        levels = sorted(line.get_ydata()[0] for line in ax.get_lines()
                        if line.get_linestyle() == "--")
        assert levels == [-limit, limit]
    # the wheel speeds stay inside their limit (the law saturates them)
    assert np.abs(d["wheel_rpm"]).max() <= rpm_max * (1 + 1e-12)


@pytest.mark.parametrize("error, expected", [
    ([5.0, 2.0, 0.5, 0.2], 2.0),          # below 1 degree from t = 2 on
    ([0.5, 0.2, 0.1, 0.0], 0.0),          # within from the start
    ([5.0, 0.5, 0.2, 3.0], np.nan),       # outside again at the end: never settled
    ([0.5, 1.0, 0.2, 0.1], 2.0),          # exactly 1 degree counts as outside
])
def test_settling_time(error, expected):
    t = np.array([0.0, 1.0, 2.0, 3.0])
    got = satellite._settling_time(t, np.array(error))
    assert (np.isnan(got) and np.isnan(expected)) or got == expected
