"""SciPy cases on ruda arrays (run by tests/_sklearn_scipy_cases.py, which adds them to its CASES).

Each case calls a SciPy function on ruda arrays on the device (inside ``ruda.default_device``)
and on the NumPy arrays, and compares values and dtypes (``Ctx.check``).  A call that SciPy makes
through NumPy on a non-host device is retried under ``ruda.allow_host_conversion()`` by
``Ctx.ruda_call`` and recorded; ``THROUGH_NUMPY`` lists the calls allowed to do that and
``ON_DEVICE`` those that must not (both checked by tests/test_sklearn_scipy.py, and quoted in the
README).  Importing this module imports no SciPy.
"""
import os
import warnings

import numpy as np

CASES = {}    # name -> function(ctx)


def case(fn):
    CASES[fn.__name__] = fn
    return fn


# SciPy calls these cases make that stay on a non-host device (no NumPy conversion, results
# ruda arrays on the device), and those that convert their input with np.asarray.
ON_DEVICE = frozenset("""
    special.logsumexp special.softmax special.log_softmax special.xlogy special.rel_entr
    stats.zscore stats.skew stats.kurtosis stats.sem stats.variation stats.moment stats.gmean
    stats.hmean stats.pmean stats.quantile stats.rankdata stats.describe stats.trim_mean stats.iqr
    stats.circmean stats.circvar stats.circstd stats.tmean stats.tvar stats.tstd stats.tmin
    stats.tmax stats.tsem stats.gstd stats.mode stats.boxcox_llf stats.false_discovery_control
    stats.zmap
    fft.fft fft.ifft fft.rfft fft.irfft fft.fftn fft.rfftn fft.fftshift fft.hfft fft.fftfreq
    signal.fftconvolve signal.oaconvolve signal.hilbert signal.resample
    cluster.whiten
""".split())
THROUGH_NUMPY = frozenset("""
    special.erf special.erfc special.expit special.ndtr special.log_ndtr special.gammaln
    special.entr special.i0e special.ndtri special.logit special.erfinv special.gamma
    special.psi special.i0
    stats.entropy stats.ttest_ind stats.pearsonr stats.ttest_rel stats.ttest_1samp stats.f_oneway
    stats.skewtest stats.normaltest stats.kendalltau stats.spearmanr stats.linregress
    stats.chisquare stats.wasserstein_distance stats.jarque_bera stats.ranksums stats.levene
    fft.dct fft.idct fft.dst
    signal.convolve signal.correlate signal.convolve2d signal.lfilter signal.sosfilt
    signal.filtfilt signal.detrend signal.welch signal.medfilt signal.savgol_filter
    ndimage.gaussian_filter ndimage.uniform_filter ndimage.median_filter ndimage.maximum_filter
    ndimage.sobel ndimage.laplace ndimage.convolve ndimage.zoom ndimage.shift
    cluster.vq cluster.kmeans2 cluster.linkage cluster.fcluster
""".split())


def _sp_call(ctx, fn, *np_args, **kwargs):
    """``fn`` on ruda arrays on the device and on the NumPy arrays (the reference).

    SciPy makes some arrays without ``device=`` (``xp.asarray(n1 == 1)`` in ttest_ind,
    ``xp.arange(...)`` in scipy.cluster.hierarchy), relying on the namespace's current device
    as with CuPy; with ruda that is ``ruda.default_device``, which a user of a non-host device
    selects, so the ruda call runs inside ``with ruda.default_device(device)``.  (The
    scikit-learn cases run without it: scikit-learn passes ``device=`` everywhere.)
    """
    args = [ctx.put(a) if isinstance(a, np.ndarray) else a for a in np_args]   # scalars stay
    with ctx.xp.default_device(ctx.dev):
        got = ctx.ruda_call(fn, *args, **kwargs)
    return got, fn(*np_args, **kwargs)


@case
def scipy_special(ctx):
    from scipy import special
    x, p = ctx.data(40), ctx.data(40, low=0.05)
    u = (1 / (1 + np.exp(-x))).astype(ctx.dtype)
    for name in ("erf", "erfc", "expit", "ndtr", "log_ndtr", "gammaln", "entr", "i0e", "ndtri"):
        arg = u if name == "ndtri" else (p if name in ("entr", "gammaln") else x)
        ctx.check(*_sp_call(ctx, getattr(special, name), arg), f"special.{name}")
    ctx.check(*_sp_call(ctx, special.logit, u), "special.logit")
    ctx.check(*_sp_call(ctx, special.xlogy, p, p[::-1]), "special.xlogy")
    ctx.check(*_sp_call(ctx, special.rel_entr, p, p[::-1]), "special.rel_entr")
    A = ctx.data(5, 8)
    ctx.check(*_sp_call(ctx, special.logsumexp, A, axis=1), "special.logsumexp")
    ctx.check(*_sp_call(ctx, special.softmax, A, axis=1), "special.softmax")
    ctx.check(*_sp_call(ctx, special.log_softmax, A, axis=0), "special.log_softmax")


@case
def scipy_stats(ctx):
    from scipy import stats
    A, B = ctx.data(30, 4), ctx.data(30, 4)
    P = ctx.data(30, 4, low=0.1)
    for name in ("zscore", "skew", "kurtosis", "sem", "variation"):
        ctx.check(*_sp_call(ctx, getattr(stats, name), A, axis=0), f"stats.{name}")
    ctx.check(*_sp_call(ctx, stats.moment, A, order=3, axis=0), "stats.moment")
    for name in ("gmean", "hmean", "entropy"):
        ctx.check(*_sp_call(ctx, getattr(stats, name), P, axis=0), f"stats.{name}")
    got, want = _sp_call(ctx, stats.ttest_ind, A, B, axis=0)
    ctx.check(got.statistic, want.statistic, "ttest_ind.statistic")
    ctx.check(got.pvalue, want.pvalue, "ttest_ind.pvalue", rtol=max(ctx.rtol, 1e-7))
    ctx.check(*_sp_call(ctx, stats.quantile, A, 0.3, axis=0), "stats.quantile")
    ctx.check(*_sp_call(ctx, stats.rankdata, A, axis=0), "stats.rankdata")
    got, want = _sp_call(ctx, stats.describe, A, axis=0)
    for f in ("mean", "variance", "skewness", "kurtosis"):
        ctx.check(getattr(got, f), getattr(want, f), f"describe.{f}")
    ctx.check(got.minmax[0], want.minmax[0], "describe.minmax[0]")
    ctx.check(got.minmax[1], want.minmax[1], "describe.minmax[1]")
    for name, args in (("pearsonr", (A[:, 0], B[:, 0])), ("ttest_rel", (A, B)),
                       ("ttest_1samp", (A, 0.1)), ("f_oneway", (A, B)),
                       ("skewtest", (A,)), ("normaltest", (A,)), ("kendalltau", (A[:, 0], B[:, 0])),
                       ("spearmanr", (A[:, 0], B[:, 0]))):
        if name in ("pearsonr", "kendalltau", "spearmanr"):
            got, want = _sp_call(ctx, getattr(stats, name), *args)
        elif name == "ttest_1samp":
            got, want = _sp_call(ctx, stats.ttest_1samp, args[0], popmean=args[1], axis=0)
        else:
            got, want = _sp_call(ctx, getattr(stats, name), *args, axis=0)
        ctx.check(got.statistic, want.statistic, f"{name}.statistic")
        ctx.check(got.pvalue, want.pvalue, f"{name}.pvalue", rtol=max(ctx.rtol, 1e-7))
    got, want = _sp_call(ctx, stats.linregress, A[:, 0], B[:, 0])
    for f in ("slope", "intercept", "rvalue", "pvalue", "stderr"):
        ctx.check(getattr(got, f), getattr(want, f), f"linregress.{f}", rtol=max(ctx.rtol, 1e-7))


@case
def scipy_fft(ctx):
    from scipy import fft
    x = ctx.data(16)
    c = (x + 1j * ctx.data(16)).astype(np.result_type(ctx.dtype, np.complex64))
    A = ctx.data(4, 8)
    for name in ("fft", "ifft"):
        ctx.check(*_sp_call(ctx, getattr(fft, name), c), f"fft.{name}")
    ctx.check(*_sp_call(ctx, fft.rfft, x), "fft.rfft")
    ctx.check(*_sp_call(ctx, fft.irfft, np.fft.rfft(x), n=16), "fft.irfft")
    ctx.check(*_sp_call(ctx, fft.fftn, A.astype(c.dtype)), "fft.fftn")
    ctx.check(*_sp_call(ctx, fft.rfftn, A, norm="ortho"), "fft.rfftn(ortho)")
    ctx.check(*_sp_call(ctx, fft.fftshift, A, axes=1), "fft.fftshift")
    for name in ("dct", "idct", "dst"):
        ctx.check(*_sp_call(ctx, getattr(fft, name), x), f"fft.{name}")
    ctx.check(*_sp_call(ctx, fft.hfft, c[:9], n=16), "fft.hfft")
    got = ctx.ruda_call(fft.fftfreq, 16, d=0.5, xp=ctx.xp, device=ctx.dev)
    ctx.check(got, np.fft.fftfreq(16, d=0.5), "fft.fftfreq(xp=ruda)")


@case
def scipy_cluster(ctx):
    from scipy.cluster import hierarchy, vq
    X = ctx.data(30, 3)
    X[:10] += 4
    ctx.check(*_sp_call(ctx, vq.whiten, X), "vq.whiten")
    book = X[[0, 15]]
    got, want = _sp_call(ctx, vq.vq, X, book)
    ctx.check(got[0], want[0], "vq.vq codes")
    ctx.check(got[1], want[1], "vq.vq distances")
    got, want = _sp_call(ctx, vq.kmeans2, X, book, minit="matrix")
    ctx.check(got[0], want[0], "kmeans2 centroids")
    ctx.check(got[1], want[1], "kmeans2 labels")
    got, want = _sp_call(ctx, hierarchy.linkage, X, method="ward")
    ctx.check(got, want, "hierarchy.linkage(ward)")
    ctx.check(*_sp_call(ctx, hierarchy.fcluster, want, t=2, criterion="maxclust"),
              "hierarchy.fcluster")


@case
def scipy_special_more(ctx):
    from scipy import special
    x, p = ctx.data(40), ctx.data(40, low=0.5)
    ctx.check(*_sp_call(ctx, special.erfinv, np.tanh(x).astype(ctx.dtype)), "special.erfinv")
    for name in ("gamma", "psi"):
        ctx.check(*_sp_call(ctx, getattr(special, name), p), f"special.{name}")
    ctx.check(*_sp_call(ctx, special.i0, x / 4), "special.i0")


@case
def scipy_stats_more(ctx):
    from scipy import stats
    x, y = ctx.data(40), ctx.data(25)
    p = ctx.data(40, low=0.1)
    for name in ("trim_mean", "pmean"):
        arg = 0.1 if name == "trim_mean" else 2.0
        ctx.check(*_sp_call(ctx, getattr(stats, name), p, arg), f"stats.{name}")
    for name in ("iqr", "circmean", "circvar", "circstd", "tmean", "tvar", "tstd", "tmin", "tmax",
                 "tsem"):
        ctx.check(*_sp_call(ctx, getattr(stats, name), x), f"stats.{name}")
    ctx.check(*_sp_call(ctx, stats.gstd, p), "stats.gstd")
    ctx.check(*_sp_call(ctx, stats.zmap, x, y), "stats.zmap")
    ctx.check(*_sp_call(ctx, stats.boxcox_llf, 0.5, p), "stats.boxcox_llf")
    ctx.check(*_sp_call(ctx, stats.false_discovery_control, np.tanh(p).astype(ctx.dtype)),
              "stats.false_discovery_control")
    got, want = _sp_call(ctx, stats.mode, np.round(x))
    ctx.check(got.mode, want.mode, "mode.mode")
    ctx.check(got.count, want.count, "mode.count")
    got, want = _sp_call(ctx, stats.chisquare, p + 1)
    ctx.check(got.statistic, want.statistic, "chisquare.statistic")
    ctx.check(got.pvalue, want.pvalue, "chisquare.pvalue", rtol=max(ctx.rtol, 1e-7))
    ctx.check(*_sp_call(ctx, stats.wasserstein_distance, x, y), "stats.wasserstein_distance")
    for name, args in (("jarque_bera", (x,)), ("ranksums", (x, y)), ("levene", (x, y))):
        got, want = _sp_call(ctx, getattr(stats, name), *args)
        ctx.check(got.statistic, want.statistic, f"{name}.statistic")
        ctx.check(got.pvalue, want.pvalue, f"{name}.pvalue", rtol=max(ctx.rtol, 1e-7))


@case
def scipy_signal(ctx):
    from scipy import signal
    x, k, A = ctx.data(64), ctx.data(7), ctx.data(8, 9)
    b, a = np.asarray([0.2, 0.3], ctx.dtype), np.asarray([1.0, -0.5], ctx.dtype)
    for name in ("convolve", "correlate", "fftconvolve", "oaconvolve"):
        for mode in ("full", "same", "valid"):
            ctx.check(*_sp_call(ctx, getattr(signal, name), x, k, mode=mode), f"signal.{name}({mode})")
    ctx.check(*_sp_call(ctx, signal.convolve2d, A, A[:3, :3]), "signal.convolve2d")
    ctx.check(*_sp_call(ctx, signal.hilbert, x), "signal.hilbert")
    ctx.check(*_sp_call(ctx, signal.resample, x, 48), "signal.resample")
    ctx.check(*_sp_call(ctx, signal.lfilter, b, a, x), "signal.lfilter")
    ctx.check(*_sp_call(ctx, signal.filtfilt, b, a, x), "signal.filtfilt")
    sos = np.asarray([[0.2, 0.3, 0.0, 1.0, -0.5, 0.0]], ctx.dtype)
    ctx.check(*_sp_call(ctx, signal.sosfilt, sos, x), "signal.sosfilt")
    ctx.check(*_sp_call(ctx, signal.detrend, x), "signal.detrend")
    ctx.check(*_sp_call(ctx, signal.medfilt, x, 5), "signal.medfilt")
    ctx.check(*_sp_call(ctx, signal.savgol_filter, x, 7, 2), "signal.savgol_filter")
    got, want = _sp_call(ctx, signal.welch, x, nperseg=16)   # SciPy returns NumPy arrays here
    for g, w, what in zip(got, want, ("frequencies", "density")):
        g = g.to_device("cpu") if isinstance(g, ctx.xp.Array) else g
        np.testing.assert_allclose(np.asarray(g), w, rtol=ctx.rtol, atol=ctx.atol,
                                   err_msg=f"welch {what}")


@case
def scipy_ndimage(ctx):
    from scipy import ndimage
    A = ctx.data(10, 12)
    for name, args in (("gaussian_filter", (1.0,)), ("uniform_filter", (3,)), ("median_filter", (3,)),
                       ("maximum_filter", (3,)), ("sobel", ()), ("laplace", ()),
                       ("convolve", (ctx.data(3, 3),)), ("zoom", (2,)), ("shift", (1.5,))):
        ctx.check(*_sp_call(ctx, getattr(ndimage, name), A, *args), f"ndimage.{name}")


@case
def host_conversion_opt_in(ctx):
    """special.erf/expit, stats.entropy and signal.convolve go through NumPy: on a device they
    raise TypeError, and run under ruda.allow_host_conversion() with a HostConversionWarning
    naming SciPy's frame (the one that called NumPy) and values equal to NumPy's."""
    from scipy import signal, special, stats
    xp = ctx.xp
    x, p, k = ctx.data(40), ctx.data(40, low=0.05), ctx.data(5)
    for fn, args in ((special.erf, (x,)), (special.expit, (x,)), (stats.entropy, (p,)),
                     (signal.convolve, (x, k))):
        what = f"{fn.__module__}.{fn.__name__}"
        rargs = [ctx.put(a) for a in args]
        with xp.default_device(ctx.dev):
            if ctx.dev.kind != "cpu":
                try:
                    fn(*rargs)
                    raise AssertionError(f"{what} ran on '{ctx.dev}' without the opt-in")
                except TypeError as e:
                    assert "needs a host array" in str(e) and "allow_host_conversion" in str(e), e
            with warnings.catch_warnings(record=True) as seen, xp.allow_host_conversion():
                warnings.simplefilter("always")
                got = fn(*rargs)
        sites = [w for w in seen if issubclass(w.category, xp.HostConversionWarning)]
        if ctx.dev.kind == "cpu":
            assert not sites, f"{what}: a host array needs no host copy"
        else:
            assert sites, f"{what}: no HostConversionWarning"
            for w in sites:
                assert f"{os.sep}scipy{os.sep}" in w.filename and f"{w.filename}:{w.lineno}" in \
                    str(w.message), (w.filename, w.lineno, str(w.message))
        ctx.check(got, fn(*args), f"{what} under allow_host_conversion")
