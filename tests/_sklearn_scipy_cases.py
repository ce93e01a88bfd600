"""scikit-learn / SciPy array-API cases on ruda arrays, run in a child process per device.

``SCIPY_ARRAY_API=1`` has to be in the environment before SciPy is first imported, which
cannot be guaranteed inside a shared pytest process; ``tests/test_sklearn_scipy.py`` therefore
runs ``python tests/_sklearn_scipy_cases.py DEVICE`` with the variable set and reads one JSON
line of results.  Importing this module imports neither SciPy nor scikit-learn (they are
imported inside the cases), so the test module can list the case names at collection time.

Each case runs the same call on NumPy input (the reference) and on ruda input on DEVICE,
then compares values and dtypes; results that scikit-learn/SciPy return in the input's
namespace must be ruda arrays on DEVICE.  Data are small (50 x 6) and float64 where the
device supports it, else float32 (with float32 tolerances).
"""
import json
import os
import sys
import traceback

import numpy as np

CASES = {}    # name -> function(ctx)

# Outcome of a case, as reported by the child process.
PASS, FAIL, GAP, HOST_ONLY = "pass", "fail", "gap", "host-only"


def case(fn):
    CASES[fn.__name__] = fn
    return fn


class _HostOnly:
    """Stands for the result of a call that needed the data on the host (see Ctx.ruda_call)."""

    def __getitem__(self, i):
        return self

    def __getattr__(self, name):
        return self

    def __iter__(self):
        while True:
            yield self


_HOST_ONLY = _HostOnly()


class Ctx:
    """What a case needs: the device, the data dtype, converters and the comparison."""

    def __init__(self, dev):
        import ruda
        self.xp = ruda
        self.dev = ruda.device(dev)
        f64 = "float64" in ruda.__array_namespace_info__().dtypes(device=self.dev)
        self.dtype = np.dtype(np.float64 if f64 else np.float32)
        self.rtol, self.atol = (1e-8, 1e-10) if f64 else (2e-4, 1e-5)
        self.rng = np.random.default_rng(0)
        self.host_only = []    # calls that converted device input through NumPy (non-cpu only)

    def ruda_call(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)`` on ruda input.

        On a non-host device, a library that converts its input through NumPy (SciPy's
        fallback for namespaces it does not know) hits ruda's refusal of implicit device to
        host transfers; that call is recorded as host-only and its checks are left out.
        """
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            if self.dev.kind == "cpu" or "needs a host array" not in str(e):
                raise
            self.host_only.append(getattr(fn, "__name__", repr(fn)))
            return _HOST_ONLY

    def data(self, *shape, low=None):
        a = self.rng.standard_normal(shape)
        if low is not None:
            a = np.abs(a) + low
        return a.astype(self.dtype)

    def labels(self, n, k=3):
        y = np.arange(n) % k
        self.rng.shuffle(y)
        return y.astype(np.int64)

    def put(self, a):
        """A ruda array on the case's device holding NumPy array ``a``."""
        return self.xp.asarray(a, device=self.dev)

    def check(self, got, want, what, rtol=None, atol=None):
        """``got`` (from ruda input) against ``want`` (the same call on NumPy input).

        An array result must be a ruda array on the device with NumPy's dtype and values;
        a scalar result (Python or NumPy scalar, or 0-d array) must match NumPy's value.
        """
        if got is _HOST_ONLY:
            return
        rtol = self.rtol if rtol is None else rtol
        atol = self.atol if atol is None else atol
        xp = self.xp
        if isinstance(want, np.ndarray) and want.ndim > 0:
            assert isinstance(got, xp.Array), \
                f"{what}: expected a ruda array, got {type(got).__module__}.{type(got).__name__}"
            assert got.device == self.dev, f"{what}: result on {got.device}, input on {self.dev}"
            assert got.shape == want.shape, f"{what}: shape {got.shape} != NumPy's {want.shape}"
            g = np.asarray(got.to_device("cpu"))
            assert g.dtype == want.dtype, f"{what}: dtype {g.dtype} != NumPy's {want.dtype}"
        else:
            if isinstance(got, xp.Array):
                assert got.ndim == 0 and got.device == self.dev, \
                    f"{what}: expected a scalar or a 0-d array on {self.dev}; got {got!r}"
                g = np.asarray(got.to_device("cpu"))
                if isinstance(want, np.ndarray | np.generic):
                    assert g.dtype == want.dtype, f"{what}: dtype {g.dtype} != NumPy's {want.dtype}"
            else:
                assert isinstance(got, int | float | np.generic), \
                    f"{what}: expected a scalar, got {type(got).__name__}"
                g = np.asarray(got)
        if np.asarray(want).dtype.kind in "biu":
            np.testing.assert_array_equal(g, want, err_msg=what)
        else:
            np.testing.assert_allclose(g, want, rtol=rtol, atol=atol, err_msg=what)

    def check_attrs(self, got_obj, want_obj, names, **tol):
        for n in names:
            self.check(getattr(got_obj, n), getattr(want_obj, n), n, **tol)


def _sk_pair(ctx, make, X, y=None):
    """Fit ``make()`` on NumPy data (dispatch off: plain NumPy) and on ruda data (dispatch on)."""
    import sklearn
    with sklearn.config_context(array_api_dispatch=False):
        ref = make().fit(X) if y is None else make().fit(X, y)
    Xr = ctx.put(X)
    yr = None if y is None else ctx.put(y)
    got = make().fit(Xr) if y is None else make().fit(Xr, yr)
    return ref, got, Xr


def _sk_call(ctx, fn, *np_args, **kwargs):
    """``fn`` on NumPy arguments (dispatch off) and on the same arguments as ruda arrays."""
    import sklearn
    with sklearn.config_context(array_api_dispatch=False):
        want = fn(*np_args, **kwargs)
    got = ctx.ruda_call(fn, *[ctx.put(a) for a in np_args], **kwargs)
    return got, want


def _sk_method(ctx, ref, got, method, X):
    import sklearn
    with sklearn.config_context(array_api_dispatch=False):
        want = getattr(ref, method)(X)
    return ctx.ruda_call(getattr(got, method), ctx.put(X)), want


# --- scikit-learn: decomposition ------------------------------------------------------------
_PCA_ATTRS = ("components_", "explained_variance_", "explained_variance_ratio_",
              "singular_values_", "mean_", "noise_variance_")


def _pca(ctx, **kw):
    from sklearn.decomposition import PCA
    # well separated variances: the components are well conditioned, also in float32
    X = ctx.data(50, 6) * np.asarray([6, 5, 4, 3, 2, 1], dtype=ctx.dtype)
    ref, got, _ = _sk_pair(ctx, lambda: PCA(**kw), X)
    ctx.check_attrs(got, ref, _PCA_ATTRS)
    ctx.check(got.n_components_, ref.n_components_, "n_components_")
    for m in ("transform", "inverse_transform" if not kw.get("whiten") else "transform"):
        Z = X if m == "transform" else np.asarray(ref.transform(X))
        ctx.check(*_sk_method(ctx, ref, got, m, Z), f"PCA.{m}")


@case
def pca_full(ctx):
    _pca(ctx, n_components=3, svd_solver="full")


@case
def pca_full_whiten_all_components(ctx):
    _pca(ctx, svd_solver="full", whiten=True)


@case
def pca_covariance_eigh(ctx):
    _pca(ctx, n_components=3, svd_solver="covariance_eigh")


@case
def pca_randomized(ctx):
    _pca(ctx, n_components=3, svd_solver="randomized", power_iteration_normalizer="QR",
         random_state=0)


@case
def pca_auto_fraction(ctx):
    _pca(ctx, n_components=0.8)


@case
def pca_float32_keeps_dtype(ctx):
    ctx.dtype = np.dtype(np.float32)
    ctx.rtol, ctx.atol = 2e-4, 1e-5
    _pca(ctx, n_components=4, svd_solver="full")


# --- scikit-learn: linear models ------------------------------------------------------------
@case
def ridge_svd(ctx):
    from sklearn.linear_model import Ridge
    X, y = ctx.data(50, 6), ctx.data(50)
    for yy in (y, np.stack([y, 2 * y + 1], axis=1)):
        ref, got, _ = _sk_pair(ctx, lambda: Ridge(alpha=0.5, solver="svd"), X, yy)
        ctx.check(got.coef_, ref.coef_, "coef_")
        ctx.check(got.intercept_, ref.intercept_, "intercept_")
        ctx.check(*_sk_method(ctx, ref, got, "predict", X), "predict")


@case
def ridge_svd_sample_weight_and_ridge_cv(ctx):
    from sklearn.linear_model import Ridge, RidgeCV
    X, y, w = ctx.data(50, 6), ctx.data(50), ctx.data(50, low=0.1)
    import sklearn
    with sklearn.config_context(array_api_dispatch=False):
        ref = Ridge(alpha=2.0, solver="svd").fit(X, y, sample_weight=w)
    got = Ridge(alpha=2.0, solver="svd").fit(ctx.put(X), ctx.put(y), sample_weight=ctx.put(w))
    ctx.check(got.coef_, ref.coef_, "coef_ (sample_weight)")
    ctx.check(got.intercept_, ref.intercept_, "intercept_ (sample_weight)")
    alphas = (0.1, 1.0, 10.0)
    ref, got, _ = _sk_pair(ctx, lambda: RidgeCV(alphas=alphas), X, y)
    ctx.check_attrs(got, ref, ("coef_", "intercept_", "alpha_", "best_score_"))
    ctx.check(*_sk_method(ctx, ref, got, "predict", X), "RidgeCV.predict")


@case
def ridge_classifier_svd(ctx):
    from sklearn.linear_model import RidgeClassifier
    X, y = ctx.data(50, 6), ctx.labels(50)
    ref, got, _ = _sk_pair(ctx, lambda: RidgeClassifier(alpha=0.5, solver="svd"), X, y)
    ctx.check_attrs(got, ref, ("coef_", "intercept_", "classes_"))
    ctx.check(*_sk_method(ctx, ref, got, "decision_function", X), "decision_function")
    ctx.check(*_sk_method(ctx, ref, got, "predict", X), "predict")


# --- scikit-learn: discriminant analysis ----------------------------------------------------
@case
def lda_svd(ctx):
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    X, y = ctx.data(50, 6), ctx.labels(50)
    X[y == 1] += 1.5
    ref, got, _ = _sk_pair(ctx, LinearDiscriminantAnalysis, X, y)
    ctx.check_attrs(got, ref, ("coef_", "intercept_", "means_", "priors_", "xbar_",
                               "explained_variance_ratio_", "scalings_", "classes_"))
    for m in ("transform", "decision_function", "predict_proba", "predict_log_proba", "predict"):
        ctx.check(*_sk_method(ctx, ref, got, m, X), f"LinearDiscriminantAnalysis.{m}")


# --- scikit-learn: preprocessing ------------------------------------------------------------
def _scaler(ctx, make, attrs):
    X = ctx.data(50, 6)
    X[:, 2] *= 10
    ref, got, _ = _sk_pair(ctx, make, X)
    ctx.check_attrs(got, ref, attrs)
    ctx.check(*_sk_method(ctx, ref, got, "transform", X), "transform")
    Z = np.asarray(ref.transform(X))
    ctx.check(*_sk_method(ctx, ref, got, "inverse_transform", Z), "inverse_transform")


@case
def standard_scaler(ctx):
    from sklearn.preprocessing import StandardScaler
    _scaler(ctx, StandardScaler, ("mean_", "var_", "scale_"))


@case
def minmax_scaler(ctx):
    from sklearn.preprocessing import MinMaxScaler
    _scaler(ctx, lambda: MinMaxScaler(feature_range=(-1, 2)),
            ("data_min_", "data_max_", "data_range_", "scale_", "min_"))


@case
def maxabs_scaler(ctx):
    from sklearn.preprocessing import MaxAbsScaler
    _scaler(ctx, MaxAbsScaler, ("max_abs_", "scale_"))


@case
def normalizer_and_normalize(ctx):
    from sklearn.preprocessing import Normalizer, normalize
    X = ctx.data(50, 6)
    for norm in ("l1", "l2", "max"):
        ref, got, _ = _sk_pair(ctx, lambda: Normalizer(norm=norm), X)
        ctx.check(*_sk_method(ctx, ref, got, "transform", X), f"Normalizer({norm}).transform")
        ctx.check(*_sk_call(ctx, normalize, X, norm=norm), f"normalize(norm={norm})")


@case
def binarizer_kernel_centerer_polynomial(ctx):
    from sklearn.preprocessing import Binarizer, KernelCenterer, PolynomialFeatures
    X = ctx.data(50, 4)
    ref, got, _ = _sk_pair(ctx, lambda: Binarizer(threshold=0.2), X)
    ctx.check(*_sk_method(ctx, ref, got, "transform", X), "Binarizer.transform")
    K = X @ X.T
    ref, got, _ = _sk_pair(ctx, KernelCenterer, K)
    ctx.check_attrs(got, ref, ("K_fit_rows_", "K_fit_all_"))
    ctx.check(*_sk_method(ctx, ref, got, "transform", K), "KernelCenterer.transform")
    ref, got, _ = _sk_pair(ctx, lambda: PolynomialFeatures(degree=2), X)
    ctx.check(*_sk_method(ctx, ref, got, "transform", X), "PolynomialFeatures.transform")


@case
def label_encoder(ctx):
    from sklearn.preprocessing import LabelEncoder
    y = ctx.labels(50, 4) * 3 - 2
    import sklearn
    with sklearn.config_context(array_api_dispatch=False):
        ref = LabelEncoder().fit(y)
        want_t, want_i = ref.transform(y), ref.inverse_transform(ref.transform(y)[::-1])
    got = LabelEncoder().fit(ctx.put(y))
    ctx.check(got.classes_, ref.classes_, "classes_")
    ctx.check(ctx.ruda_call(got.transform, ctx.put(y)), want_t, "transform")
    ctx.check(ctx.ruda_call(got.inverse_transform, ctx.put(want_t[::-1].copy())), want_i,
              "inverse_transform")


@case
def gaussian_nb(ctx):
    from sklearn.naive_bayes import GaussianNB
    X, y = ctx.data(50, 6), ctx.labels(50)
    X[y == 2] -= 1.0
    ref, got, _ = _sk_pair(ctx, GaussianNB, X, y)
    ctx.check_attrs(got, ref, ("classes_", "class_prior_", "class_count_", "theta_", "var_"))
    for m in ("predict_proba", "predict_log_proba", "predict"):
        ctx.check(*_sk_method(ctx, ref, got, m, X), f"GaussianNB.{m}")


@case
def nystroem(ctx):
    from sklearn.kernel_approximation import Nystroem
    X = ctx.data(50, 6)
    ref, got, _ = _sk_pair(ctx, lambda: Nystroem(n_components=20, gamma=0.3, random_state=0), X)
    ctx.check_attrs(got, ref, ("components_", "component_indices_", "normalization_"))
    ctx.check(*_sk_method(ctx, ref, got, "transform", X), "Nystroem.transform")


# --- scikit-learn: metrics ------------------------------------------------------------------
@case
def regression_metrics(ctx):
    from sklearn import metrics
    y, p = ctx.data(50), ctx.data(50)
    for name in ("r2_score", "mean_squared_error", "root_mean_squared_error", "mean_absolute_error",
                 "explained_variance_score", "max_error", "mean_pinball_loss",
                 "median_absolute_error", "d2_absolute_error_score",
                 "mean_absolute_percentage_error"):
        ctx.check(*_sk_call(ctx, getattr(metrics, name), y, p), name)
    yp, pp = ctx.data(50, low=0.1), ctx.data(50, low=0.1)
    for name in ("mean_poisson_deviance", "mean_gamma_deviance", "mean_squared_log_error",
                 "d2_tweedie_score"):
        ctx.check(*_sk_call(ctx, getattr(metrics, name), yp, pp), name)
    ctx.check(*_sk_call(ctx, metrics.mean_tweedie_deviance, yp, pp, power=1.5),
              "mean_tweedie_deviance(power=1.5)")
    w = ctx.data(50, low=0.1)
    ctx.check(*_sk_call(ctx, metrics.r2_score, y, p, sample_weight=w), "r2_score(sample_weight)")


@case
def classification_metrics(ctx):
    from sklearn import metrics
    y, p = ctx.labels(50), ctx.labels(50)
    for name in ("accuracy_score", "zero_one_loss", "balanced_accuracy_score", "cohen_kappa_score",
                 "hamming_loss"):
        ctx.check(*_sk_call(ctx, getattr(metrics, name), y, p), name)
    for avg in ("macro", "micro", "weighted"):
        for name in ("f1_score", "precision_score", "recall_score"):
            ctx.check(*_sk_call(ctx, getattr(metrics, name), y, p, average=avg),
                      f"{name}(average={avg})")
    ctx.check(*_sk_call(ctx, metrics.confusion_matrix, y, p), "confusion_matrix")
    ctx.check(*_sk_call(ctx, metrics.jaccard_score, y, p, average="macro"), "jaccard_score")
    ctx.check(*_sk_call(ctx, metrics.fbeta_score, y, p, beta=0.5, average="macro"), "fbeta_score")
    ctx.check(*_sk_call(ctx, metrics.multilabel_confusion_matrix, y, p),
              "multilabel_confusion_matrix")


@case
def probabilistic_metrics(ctx):
    from sklearn import metrics
    y = ctx.labels(50, 2)
    s = ctx.data(50)
    prob = 1 / (1 + np.exp(-s))
    ctx.check(*_sk_call(ctx, metrics.log_loss, y, prob), "log_loss")
    ctx.check(*_sk_call(ctx, metrics.brier_score_loss, y, prob), "brier_score_loss")
    ctx.check(*_sk_call(ctx, metrics.average_precision_score, y, s), "average_precision_score")
    got, want = _sk_call(ctx, metrics.precision_recall_curve, y, s)
    for g, w, what in zip(got, want, ("precision", "recall", "thresholds")):
        ctx.check(g, w, f"precision_recall_curve {what}")


# --- scikit-learn: pairwise -----------------------------------------------------------------
@case
def pairwise_kernels_and_distances(ctx):
    from sklearn.metrics import pairwise as pw
    X, Y = ctx.data(50, 6), ctx.data(20, 6)
    for name in ("euclidean_distances", "cosine_similarity", "cosine_distances", "linear_kernel",
                 "rbf_kernel", "polynomial_kernel", "sigmoid_kernel", "laplacian_kernel",
                 "manhattan_distances"):
        ctx.check(*_sk_call(ctx, getattr(pw, name), X, Y), name)
    Y2 = ctx.data(50, 6)
    for name in ("paired_euclidean_distances", "paired_manhattan_distances",
                 "paired_cosine_distances"):
        ctx.check(*_sk_call(ctx, getattr(pw, name), X, Y2), name)
    ctx.check(*_sk_call(ctx, pw.pairwise_distances_argmin, X, Y), "pairwise_distances_argmin")
    for metric in ("euclidean", "cosine", "manhattan"):
        ctx.check(*_sk_call(ctx, pw.pairwise_distances, X, Y, metric=metric),
                  f"pairwise_distances({metric})")
    for metric in ("rbf", "polynomial", "linear"):
        ctx.check(*_sk_call(ctx, pw.pairwise_kernels, X, Y, metric=metric),
                  f"pairwise_kernels({metric})")
    P, Q = ctx.data(50, 6, low=0.1), ctx.data(20, 6, low=0.1)
    for name in ("additive_chi2_kernel", "chi2_kernel"):
        ctx.check(*_sk_call(ctx, getattr(pw, name), P, Q), name)


# --- SciPy ----------------------------------------------------------------------------------
def _sp_call(ctx, fn, *np_args, **kwargs):
    """``fn`` on ruda arrays on the device and on the NumPy arrays (the reference).

    SciPy makes some arrays without ``device=`` (``xp.asarray(n1 == 1)`` in ttest_ind,
    ``xp.arange(...)`` in scipy.cluster.hierarchy), relying on the namespace's current device
    as with CuPy; with ruda that is ``ruda.default_device``, which a user of a non-host device
    selects, so the ruda call runs inside ``with ruda.default_device(device)``.  (The
    scikit-learn cases run without it: scikit-learn passes ``device=`` everywhere.)
    """
    args = [ctx.put(a) for a in np_args]
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
    ctx.check(*_sp_call(ctx, fft.dct, x), "fft.dct")
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


# --- driver ---------------------------------------------------------------------------------
def run(dev, names=None):
    if "scipy" in sys.modules and os.environ.get("SCIPY_ARRAY_API") != "1":
        raise RuntimeError("SciPy was imported before SCIPY_ARRAY_API=1 was set")
    os.environ["SCIPY_ARRAY_API"] = "1"
    import sklearn
    sklearn.set_config(array_api_dispatch=True)
    dev_is_host = str(dev) == "cpu"
    out = {}
    for name in names or CASES:
        ctx = Ctx(dev)
        try:
            CASES[name](ctx)
            out[name] = (PASS, "") if not ctx.host_only else \
                (HOST_ONLY, f"{', '.join(ctx.host_only)} convert their input with np.asarray "
                            f"(the other checks of this case passed)")
        except Exception as e:  # noqa: BLE001 - every failure is reported, with its traceback
            msg = str(e)
            if isinstance(e, NotImplementedError) and "is not implemented on device" in msg:
                out[name] = (GAP, msg)
            elif not dev_is_host and isinstance(e, TypeError) and "needs a host array" in msg:
                out[name] = (HOST_ONLY, msg)
            else:
                out[name] = (FAIL, traceback.format_exc())
    return out


if __name__ == "__main__":
    results = run(sys.argv[1], sys.argv[2:] or None)
    print("RESULTS " + json.dumps(results))
