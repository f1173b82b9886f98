"""Logarithms and exponentials with the same bits on every CPU, and the log and symlog axis
scales built on them.

numpy runs ``np.log``, ``np.log10``, ``np.exp`` and ``np.power`` through SIMD code it picks for
the CPU at hand (AVX-512 where there is one), and glibc picks FMA variants of ``log``, ``exp``
and ``pow`` the same way; on the same numbers the results differ in the last bits from one CPU
to another (``np.log10``: up to 2 ULP, in about one value in six). matplotlib's log axes place
every point through ``np.log10``, so a figure with thousands of points on a log axis (Fig. 8's
CDFs) rasterizes a few pixels differently on another machine, though its PDF (coordinates
written to 6 decimals) and its CSV do not change. The functions here use only ``+ - * /``,
``floor``, ``frexp`` and ``ldexp``, which IEEE 754 rounds the same way everywhere (numpy's SIMD
arithmetic included), so the figures' positions and the geometric means behind them are the
same bits on any machine. They are accurate to a few ULP, not correctly rounded.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib import scale as mscale

# ln 2 split (fdlibm): _LN2_HI has its low 32 bits zero, so k * _LN2_HI is exact for |k| < 2**20
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_LN2 = _LN2_HI + _LN2_LO
_SQRT_HALF = 0.7071067811865476
# ln m = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...), s = (m - 1) / (m + 1), |s| <= 0.1716 for m in
# [sqrt(1/2), sqrt(2)): eleven terms reach below 1e-17
_ATANH = tuple(1.0 / (2 * k + 1) for k in range(12))
# e^r = sum r^n / n!, |r| <= ln(2) / 2: terms to n = 15 reach below 1e-18
_EXP = tuple(1.0 / math.factorial(n) for n in range(16))
_EXP_MAX, _EXP_MIN = 709.782712893384, -745.1332191019412  # beyond these e^x is inf / 0 in float64


def log(x) -> np.ndarray:
    """The natural logarithm, elementwise: -inf at 0, NaN below 0 and at NaN, inf at inf."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        m, e = np.frexp(np.where(np.isfinite(x) & (x > 0), x, 1.0))  # x = m 2^e, 1/2 <= m < 1
        low = m < _SQRT_HALF
        m = np.where(low, m * 2.0, m)  # exact
        k = (e - low).astype(np.float64)
        s = (m - 1.0) / (m + 1.0)  # m - 1 is exact here (Sterbenz)
        z = s * s
        p = np.full_like(z, _ATANH[-1])
        for c in _ATANH[-2::-1]:
            p = p * z + c
        out = k * _LN2_HI + ((s + s) * p + k * _LN2_LO)
        out = np.where(x > 0, out, np.where(x == 0, -np.inf, np.nan))
        return np.where(np.isinf(x) & (x > 0), np.inf, out)


def exp(x) -> np.ndarray:
    """e to the x, elementwise (inf above about 709.78, 0 below about -745.13, NaN at NaN)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        t = np.clip(np.where(np.isnan(x), 0.0, x), _EXP_MIN - 1.0, _EXP_MAX + 1.0)
        k = np.floor(t / _LN2 + 0.5)
        r = (t - k * _LN2_HI) - k * _LN2_LO  # |r| <= ln(2) / 2 (a hair more after rounding)
        p = np.full_like(r, _EXP[-1])
        for c in _EXP[-2::-1]:
            p = p * r + c
        out = np.ldexp(p, k.astype(np.int64))  # exact scaling; overflows to inf, underflows to 0
        out = np.where(t > _EXP_MAX, np.inf, np.where(t < _EXP_MIN, 0.0, out))
        return np.where(np.isnan(x), np.nan, out)


def _scalar_log(value: float) -> float:
    return float(log(value))


_LN10 = _scalar_log(10.0)


def log10(x) -> np.ndarray:
    """The base-10 logarithm, elementwise (1 at 10; a few ULP off at other powers of 10)."""
    return log(x) / _LN10


class LogTransform(mscale.LogTransform):
    """matplotlib's log transform with the logarithm above (same clipping of values <= 0)."""

    def transform_non_affine(self, values):
        values = np.asarray(values, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = log(values) / _scalar_log(self.base)
        if self._clip:
            out[values <= 0] = -1000  # as matplotlib's: far off the axis, finite for every backend
        return out

    def inverted(self):
        return InvertedLogTransform(self.base)


class InvertedLogTransform(mscale.InvertedLogTransform):
    def transform_non_affine(self, values):
        return exp(np.asarray(values, dtype=np.float64) * _scalar_log(self.base))

    def inverted(self):
        return LogTransform(self.base)


class LogScale(mscale.LogScale):
    """matplotlib's log scale (name "log", the same ticks and limits) on ``LogTransform``:
    ``ax.set_yscale(LogScale())`` where ``ax.set_yscale("log")`` would do."""

    def __init__(self, axis=None, *, base=10, subs=None, nonpositive="clip"):
        super().__init__(axis, base=base, subs=subs, nonpositive=nonpositive)
        self._transform = LogTransform(base, nonpositive)


class SymmetricalLogTransform(mscale.SymmetricalLogTransform):
    """matplotlib's symlog transform (linear inside +-linthresh, logarithmic outside) with the
    logarithm above."""

    def transform_non_affine(self, values):
        values = np.asarray(values, dtype=np.float64)
        linscale_adj = self.linscale / (1.0 - 1.0 / self.base)
        log_base = _scalar_log(self.base)
        abs_a = np.abs(values)
        inside = abs_a <= self.linthresh
        with np.errstate(divide="ignore", invalid="ignore"):
            out = (
                np.sign(values)
                * self.linthresh
                * (linscale_adj - _scalar_log(self.linthresh) / log_base + log(abs_a) / log_base)
            )
        out[inside] = values[inside] * linscale_adj
        return out

    def inverted(self):
        return InvertedSymmetricalLogTransform(self.base, self.linthresh, self.linscale)


class InvertedSymmetricalLogTransform(mscale.InvertedSymmetricalLogTransform):
    def transform_non_affine(self, values):
        values = np.asarray(values, dtype=np.float64)
        linscale_adj = self.linscale / (1.0 - 1.0 / self.base)
        abs_a = np.abs(values)
        inside = abs_a <= self.linthresh * linscale_adj  # the image of linthresh
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = (
                np.sign(values) * self.linthresh * exp((abs_a / self.linthresh - linscale_adj) * _scalar_log(self.base))
            )
        out[inside] = values[inside] / linscale_adj
        return out

    def inverted(self):
        return SymmetricalLogTransform(self.base, self.linthresh, self.linscale)


class SymmetricalLogScale(mscale.SymmetricalLogScale):
    """matplotlib's symlog scale (name "symlog", the same ticks) on ``SymmetricalLogTransform``:
    ``ax.set_xscale(SymmetricalLogScale(linthresh=0.1))``."""

    def __init__(self, axis=None, *, base=10, linthresh=2, subs=None, linscale=1):
        super().__init__(axis, base=base, linthresh=linthresh, subs=subs, linscale=linscale)
        self._transform = SymmetricalLogTransform(base, linthresh, linscale)
