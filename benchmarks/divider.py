"""What bounds the lock-step flows: divisions and square roots.

    python benchmarks/divider.py [--h 0.1,1] [--steps 5]

1. Throughput of the divider: a loop of independent double-precision divisions, square roots
   and multiply-adds over 256 elements, compiled with gfortran (-O3, no contraction) for the
   baseline, x86-64-v3 (AVX2) and x86-64-v4 (AVX-512, 512-bit vectors) and timed: ns per element.
   Where a division costs the same per element at every width, the divisions of the lanes do not
   get cheaper under a wider target.
2. Divisions and square roots executed per body-step of the exact quaternion step (the batched
   compiled loop frb._testing.quat_integrate_batch, 2,000 bodies of benchmarks/simd.py, one
   thread), counted by valgrind's callgrind per instruction inside the loop (each vector
   instruction counted as its number of elements), under the baseline and AVX2 targets
   (valgrind does not run AVX-512).
Needs gfortran and, for 2., valgrind and objdump; x86-64.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

KERNELS = """
subroutine kdiv(n, a, b, c)
   integer, intent(in) :: n
   real(8), intent(in) :: a(n), b(n)
   real(8), intent(out) :: c(n)
   c = a / b
end subroutine kdiv
subroutine ksqrt(n, a, b, c)
   integer, intent(in) :: n
   real(8), intent(in) :: a(n), b(n)
   real(8), intent(out) :: c(n)
   c = sqrt(a + b)
end subroutine ksqrt
subroutine kmuladd(n, a, b, c)
   integer, intent(in) :: n
   real(8), intent(in) :: a(n), b(n)
   real(8), intent(out) :: c(n)
   c = (a * b + a) * b + 0.5d0
end subroutine kmuladd
"""

MAIN = """
program main
   implicit none
   integer, parameter :: n = 256, reps = 400000
   real(8) :: a(n), b(n), c(n), t0, t1
   integer :: i
   call random_number(a); call random_number(b); b = b + 1
   call cpu_time(t0)
   do i = 1, reps
      call kdiv(n, a, b, c)
   end do
   call cpu_time(t1)
   print '(f8.3)', (t1 - t0) / (real(reps, 8) * n) * 1d9
   call cpu_time(t0)
   do i = 1, reps
      call ksqrt(n, a, b, c)
   end do
   call cpu_time(t1)
   print '(f8.3)', (t1 - t0) / (real(reps, 8) * n) * 1d9
   call cpu_time(t0)
   do i = 1, reps
      call kmuladd(n, a, b, c)
   end do
   call cpu_time(t1)
   print '(f8.3)', (t1 - t0) / (real(reps, 8) * n) * 1d9
   if (c(1) < -1) print *, c(1)
end program main
"""

TARGETS = {"baseline": [], "avx2": ["-march=x86-64-v3"], "avx512": ["-march=x86-64-v4", "-mprefer-vector-width=512"]}

DRIVER = """
import sys, numpy as np, frb, frb._testing
n, steps, h = 2000, int(sys.argv[1]), float(sys.argv[2])
rng = np.random.default_rng(2026)
m = np.abs(rng.normal(size=(n, 3))); m /= np.linalg.norm(m, axis=1, keepdims=True)
q = rng.normal(size=(n, 4)); q /= np.linalg.norm(q, axis=1, keepdims=True)
frb._testing.quat_integrate_batch(m.T, q.T, np.array([h]), np.array([[0.8], [1.7], [2.6]]), 0, steps,
                                  threads=1)
"""


def throughput(tmp: Path) -> dict[str, list[float]]:
    (tmp / "k.f90").write_text(KERNELS)
    (tmp / "m.f90").write_text(MAIN)
    out = {}
    for target, flags in TARGETS.items():
        subprocess.run(["gfortran", "-O3", "-ffp-contract=off", "-fno-trapping-math", *flags, "-c", "k.f90"],
                       cwd=tmp, check=True)
        subprocess.run(["gfortran", "-O1", "m.f90", "k.o", "-o", "m"], cwd=tmp, check=True)
        res = subprocess.run([str(tmp / "m")], capture_output=True, text=True, check=True)
        out[target] = [float(v) for v in res.stdout.split()]
    return out


def compiled_library() -> str:
    """The path of the shared library of the compiled code (libfrb_fortran) as loaded."""
    import frb._testing  # noqa: F401
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libfrb_fortran" in line:
                return line.split()[-1]
    raise RuntimeError("libfrb_fortran is not loaded")


def executed(tmp: Path, target: str, h: float, steps: int) -> dict[str, float]:
    """Elements divided and square-rooted per body-step inside the compiled loop."""
    driver = tmp / "driver.py"
    driver.write_text(DRIVER)
    cg = tmp / f"cg_{target}_{h}.out"
    subprocess.run(["valgrind", "--tool=callgrind", "--toggle-collect=*flow_batch._omp_fn.*", "--dump-instr=yes",
                    "--dump-line=no", f"--callgrind-out-file={cg}", sys.executable, str(driver), str(steps),
                    repr(h)], capture_output=True, text=True, check=True,
                   env={**os.environ, "FRB_CPU_TARGET": target, "OMP_NUM_THREADS": "1"})
    # (the loop is in the shared library of the compiled code, which frb._testing links)
    library = compiled_library()
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", library], capture_output=True,
                         text=True, check=True).stdout
    kind = {}
    for line in dis.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(\S+)\s*(.*)", line)
        if not m:
            continue
        op, args = m.group(2), m.group(3)
        if ("div" in op and (op.endswith("pd") or op.endswith("sd"))) or "sqrt" in op:
            width = 8 if "zmm" in args else 4 if "ymm" in args else 2 if op.endswith("pd") else 1
            kind[int(m.group(1), 16)] = ("division" if "div" in op else "square root", width)
    counts: collections.Counter[str] = collections.Counter()
    addr = 0
    objects: dict[str, str] = {}
    inside = False
    for line in cg.read_text().splitlines():
        o = re.match(r"^(c?)ob=\((\d+)\)\s*(.*)", line)
        if o:
            # (an object is named where it first appears, as the object or a callee's)
            if o.group(3):
                objects[o.group(2)] = o.group(3)
            if not o.group(1):
                inside = Path(objects.get(o.group(2), "")).name == Path(library).name
            continue
        m = re.match(r"^(0x[0-9a-f]+|\+\d+|-\d+|\*)\s+(\d+)", line)
        if not m:
            continue
        a = m.group(1)
        if a.startswith("0x"):
            addr = int(a, 16)
        elif a[0] in "+-":
            addr += int(a)
        if inside and addr in kind:
            name, width = kind[addr]
            counts[name] += int(m.group(2)) * width
    return {k: v / (2000 * steps) for k, v in counts.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--h", default="0.1,1")
    p.add_argument("--steps", type=int, default=5)
    a = p.parse_args(argv)
    if shutil.which("gfortran") is None:
        print("gfortran not found")
        return 1
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        tp = throughput(tmp)
        print("ns per element (independent operations, 256 elements a call):")
        print(f"  {'target':9s} {'division':>9s} {'sqrt':>9s} {'2 mul + 2 add':>14s}")
        for target, (d, s, f) in tp.items():
            print(f"  {target:9s} {d:9.3f} {s:9.3f} {f:14.3f}")
        if shutil.which("valgrind") is None or shutil.which("objdump") is None:
            print("valgrind or objdump not found: no counts")
            return 0
        print("elements divided / square-rooted per body-step, exact quaternion step (callgrind):")
        for h in (float(v) for v in a.h.split(",")):
            for target in ("baseline", "avx2"):
                c = executed(tmp, target, h, a.steps)
                print(f"  h = {h:g}, {target:8s}: {c.get('division', 0):6.1f} divisions, "
                      f"{c.get('square root', 0):5.1f} square roots; at the rates above "
                      f"{c.get('division', 0) * tp[target][0] + c.get('square root', 0) * tp[target][1]:5.1f} ns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
