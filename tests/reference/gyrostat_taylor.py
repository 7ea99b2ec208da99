"""Extended-precision reference of the gyrostat (a rigid body with a constant internal rotor).

No elliptic function is used: the equations

    m' = (m + hr) x w,   Q' = Q hat(w),   q' = q * (0, w) / 2,   w = m / inertia

(m the momentum of the rigid part, hr the constant rotor momentum, body frame) are integrated
by a Taylor-series method in binary fixed point, as in taylor.py (the free body): Q(t) = Q0 R(t),
q(t) = q0 * r(t), the rows x of R obey x' = x x w, and m, the rows of R and r are integrated
together. Scaling: S = |m0| + |hr|, s = min(inertia), mu = m / S, eta = hr / S, J = inertia / s,
tau = t S / s; then mu' = (mu + eta) x (mu / J) with |mu / J| <= 1.

Long steps use the periodicity of the motion instead of integrating every revolution: M = m + hr
moves on a closed curve (the sphere |M| = const and the energy surface), so m(t + T) = m(t) for
its period T, and the attitude increment over one period from the start, r(T), is the same for
every period (the state returns to the same point). r(T) and T are found by one integration over
a period (T is the root of (mu(tau) - mu0) . mu'(0) where mu returns to mu0, refined by Newton's
method on the Taylor polynomial of the step); then for tau = n T + rho, 0 <= rho < T,
m(tau) = m(rho) and r(tau) = r(T)^n r(rho) (n of any sign; r(T)^n by repeated squaring in 300-bit
arithmetic). The polynomials of the steps over the period are kept, so that any rho is evaluated
without integrating again.
"""

import mpmath
from mpmath import mp, mpf

from taylor import PREC, ORDER, FACTOR, HMAX, MP_PREC, _horner, _rshift_round, _series, _step_size, quat_mul_mp


class _Step:
    """One Taylor step from tau0 (fixed point) with its coefficients."""

    def __init__(self, tau0, M, X, Rq, length):
        self.tau0, self.M, self.X, self.Rq, self.length = tau0, M, X, Rq, length

    def state(self, dt):
        mu = [_horner(c, dt) for c in self.M]
        rows = [[_horner(c, dt) for c in row] for row in self.X]
        r = [_horner(c, dt) for c in self.Rq]
        return mu, rows, r


def _dot(a, b):
    return sum(_rshift_round(x * y, PREC) for x, y in zip(a, b))


class Gyrostat:
    """The scaled problem of one body, and its period."""

    def __init__(self, m0, hr, inertia):
        self.m0 = [mpf(float(x)) for x in m0]
        self.hr = [mpf(float(x)) for x in hr]
        self.I = [mpf(float(x)) for x in inertia]
        with mp.workprec(MP_PREC):
            self.S = mp.sqrt(sum(x * x for x in self.m0)) + mp.sqrt(sum(x * x for x in self.hr))
            self.s = min(self.I)
            one = mpf(2) ** PREC
            self.mu0 = [int(mpmath.nint(x / self.S * one)) for x in self.m0]
            self.eta = [int(mpmath.nint(x / self.S * one)) for x in self.hr]
            self.invJ = [int(mpmath.nint(self.s / x * one)) for x in self.I]
        self.steps = None
        self.T = None

    def _series_at(self, mu, rows, r):
        return _series(mu, rows, r, self.invJ, ORDER, self.eta)

    def period(self, max_steps=20000):
        """Integrate forward over one period; keep the steps. Returns T (fixed point)."""
        one = 1 << PREC
        mu = list(self.mu0)
        rows = [[one, 0, 0], [0, one, 0], [0, 0, one]]
        r = [one, 0, 0, 0]
        tau = 0
        # the direction of motion at the start: mu'(0) = (mu0 + eta) x (mu0 / J)
        M, X, Rq = self._series_at(mu, rows, r)
        v0 = [c[1] for c in M]
        if all(x == 0 for x in v0):
            raise ValueError("equilibrium: no period")
        steps = []
        far = 0
        hmax = int(HMAX * one)
        for _ in range(max_steps):
            M, X, Rq = self._series_at(mu, rows, r)
            hs = min(int(_step_size(M + X[0] + X[1] + X[2] + Rq, ORDER, FACTOR) * one), hmax)
            step = _Step(tau, M, X, Rq, hs)
            steps.append(step)
            mu1 = [_horner(c, hs) for c in M]
            diff0 = [a - b for a, b in zip(mu, self.mu0)]
            diff1 = [a - b for a, b in zip(mu1, self.mu0)]
            far = max(far, _dot(diff1, diff1))
            g0, g1 = _dot(diff0, v0), _dot(diff1, v0)
            near = _dot(diff1, diff1) < far // 16 and _dot(diff0, diff0) < far // 16
            if far > 0 and near and g0 < 0 <= g1:
                t_root = self._root(step, v0)
                if t_root is not None:
                    self.steps = steps
                    self.T = step.tau0 + t_root
                    self.T_index = len(steps) - 1
                    step.length = t_root
                    return self.T
            mu, rows, r = step.state(hs)
            tau += hs
        raise RuntimeError("no period found")

    def _root(self, step, v0):
        """Newton's method on g(dt) = (mu(dt) - mu0) . v0 within the step (fixed point)."""
        with mp.workprec(MP_PREC):
            scale = mpf(2) ** PREC
            M = [[mpf(c) / scale for c in comp] for comp in step.M]
            mu0 = [mpf(x) / scale for x in self.mu0]
            v = [mpf(x) / scale for x in v0]
            L = mpf(step.length) / scale

            def poly(cs, x):
                acc = mpf(0)
                for c in reversed(cs):
                    acc = acc * x + c
                return acc

            def dpoly(cs, x):
                acc = mpf(0)
                for k in range(len(cs) - 1, 0, -1):
                    acc = acc * x + k * cs[k]
                return acc

            x = L
            for _ in range(100):
                g = sum((poly(M[i], x) - mu0[i]) * v[i] for i in range(3))
                dg = sum(dpoly(M[i], x) * v[i] for i in range(3))
                dx = g / dg
                x -= dx
                if abs(dx) < mpf(2) ** (-PREC + 8):
                    break
            if not (-L / 100 <= x <= L * 1.01):
                return None
            # the state returns to its start within the fixed point's rounding (2^-180), which
            # an orbit near a separatrix or a saddle amplifies (to about 1e-28 at 1e-14 from a
            # separatrix): a return within 1e-22 is the period, a farther one a crossing of the
            # plane elsewhere on the orbit
            dist = sum((poly(M[i], x) - mu0[i]) ** 2 for i in range(3))
            if dist > mpf(10) ** -44:
                return None
            return int(mpmath.nint(x * scale))

    def state_in_period(self, rho):
        """(mu, rows, r) at 0 <= rho <= T (fixed point) from the kept steps."""
        for step in self.steps:
            if rho <= step.tau0 + step.length:
                return step.state(rho - step.tau0)
        return self.steps[-1].state(self.steps[-1].length)

    def flow(self, q0, h):
        """m(h) and q(h) = q0 * r(h) as mpf lists (300-bit)."""
        if self.T is None:
            self.period()
        with mp.workprec(MP_PREC):
            scale = mpf(2) ** PREC
            tau = mpf(float(h)) * self.S / self.s
            T = mpf(self.T) / scale
            n = int(mpmath.floor(tau / T))
            rho = tau - n * T
            mu, rows, r = self.state_in_period(int(mpmath.nint(rho * scale)))
            # the Taylor state at rho with the residual (rho - its fixed-point value) neglected
            # below 2^-PREC of the step
            rT = self.state_in_period(self.T)[2]
            rT = [mpf(x) / scale for x in rT]
            rr = [mpf(x) / scale for x in r]
            rn = _quat_power(rT, n)
            rtot = quat_mul_mp(rn, rr)
            m1 = [mpf(x) / scale * self.S for x in mu]
            q1 = quat_mul_mp([mpf(float(x)) for x in q0], rtot)
            return m1, q1


def _quat_power(q, n):
    if n < 0:
        q = [q[0], -q[1], -q[2], -q[3]]
        n = -n
    result = [mpf(1), mpf(0), mpf(0), mpf(0)]
    base = q
    while n:
        if n & 1:
            result = quat_mul_mp(result, base)
        base = quat_mul_mp(base, base)
        n >>= 1
    return result


def flow(m0, hr, inertia, q0, h):
    """Reference m(h), q(h) (mpf lists) of one body from float64 inputs (converted exactly)."""
    return Gyrostat(m0, hr, inertia).flow(q0, h)
