"""scikit-learn / SciPy array-API cases on ruda arrays, run in a child process per device.

``SCIPY_ARRAY_API=1`` has to be in the environment before SciPy is first imported, which
cannot be guaranteed inside a shared pytest process; ``tests/test_sklearn_scipy.py`` therefore
runs ``python tests/_sklearn_scipy_cases.py DEVICE`` with the variable set and reads one JSON
line of results.  Importing this module imports neither SciPy nor scikit-learn (they are
imported inside the cases), so the test module can list the case names at collection time.

Each case runs the same call on NumPy input (the reference) and on ruda input on DEVICE,
then compares values and dtypes; results that scikit-learn/SciPy return in the input's
namespace must be ruda arrays on DEVICE.  Data are small (50 x 6) and float64 where the
device supports it, else float32 (with float32 tolerances).  The SciPy cases live in
``tests/_scipy_cases.py`` and are added to ``CASES`` here.

A call that the library makes through NumPy (``np.asarray`` of the input) raises TypeError on a
non-host device; ``Ctx.ruda_call`` then runs it again under ``ruda.allow_host_conversion()``,
checks that a HostConversionWarning named a frame outside ruda, and records it: each case
reports the library calls it made and which of them went through NumPy.
"""
import json
import os
import sys
import traceback
import warnings

import numpy as np

import expected_gaps

CASES = {}    # name -> function(ctx)

# Outcome of a case, as reported by the child process.
PASS, FAIL, GAP = "pass", "fail", "gap"


def case(fn):
    CASES[fn.__name__] = fn
    return fn


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
        self.calls = []        # the library calls made (``special.erf``, ``sklearn.r2_score``)
        self.host_only = []    # those that converted device input through NumPy (non-cpu only)

    def ruda_call(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)`` on ruda input, recorded in ``calls``.

        On a non-host device, a library that converts its input through NumPy (SciPy's
        fallback for namespaces it does not know) hits ruda's refusal of implicit device to
        host copies (TypeError); the call runs again under ``ruda.allow_host_conversion()``,
        which must warn naming a frame outside ruda, and is recorded in ``host_only``.
        """
        mod = getattr(fn, "__module__", None) or ""
        name = getattr(fn, "__name__", repr(fn))
        what = f"{mod.split('.')[1]}.{name}" if mod.startswith("scipy.") else f"{mod.split('.')[0]}.{name}"
        self.calls.append(what)
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            if self.dev.kind == "cpu" or "needs a host array" not in str(e):
                raise
        with warnings.catch_warnings(record=True) as seen, self.xp.allow_host_conversion():
            warnings.simplefilter("always", self.xp.HostConversionWarning)
            out = fn(*args, **kwargs)
        sites = [w.filename for w in seen if issubclass(w.category, self.xp.HostConversionWarning)]
        ruda_dir = os.path.dirname(os.path.abspath(self.xp.__file__)) + os.sep
        assert sites and not any(f.startswith(ruda_dir) for f in sites), \
            f"{what}: the host copy warned at {sites or 'no site'} (expected the library's frame)"
        self.host_only.append(what)
        return out

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


@case
def curve_and_d2_metrics(ctx):
    """The rest of scikit-learn's array-API metrics (its metrics/tests/test_common.py list),
    and the regression metrics per output (multioutput="raw_values")."""
    from sklearn import metrics
    y = ctx.labels(50, 2)
    s = ctx.data(50)
    prob = 1 / (1 + np.exp(-s))
    # roc_curve is left out: scikit-learn 1.9 calls xp.logical_or on float arrays and
    # xp.diff(x, 2) (n positional), which the standard has not; array_api_strict fails it too.
    got, want = _sk_call(ctx, metrics.det_curve, y, s)
    for i, (g, w) in enumerate(zip(got, want)):
        ctx.check(g, w, f"det_curve[{i}]")
    for name in ("d2_brier_score", "d2_log_loss_score"):
        ctx.check(*_sk_call(ctx, getattr(metrics, name), y, prob), name)
    Y, P = ctx.data(50, 3), ctx.data(50, 3)
    ctx.check(*_sk_call(ctx, metrics.d2_pinball_score, Y[:, 0], P[:, 0], alpha=0.3), "d2_pinball_score")
    ctx.check(*_sk_call(ctx, metrics.root_mean_squared_log_error, np.abs(Y), np.abs(P)),
              "root_mean_squared_log_error")
    for name in ("r2_score", "mean_squared_error", "mean_absolute_error", "explained_variance_score"):
        ctx.check(*_sk_call(ctx, getattr(metrics, name), Y, P, multioutput="raw_values"),
                  f"{name}(multioutput=raw_values)")


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


# --- SciPy: tests/_scipy_cases.py ----------------------------------------------------------
from _scipy_cases import CASES as _SCIPY_CASES  # noqa: E402

CASES.update(_SCIPY_CASES)


# --- driver ---------------------------------------------------------------------------------
def run(dev, names=None):
    if "scipy" in sys.modules and os.environ.get("SCIPY_ARRAY_API") != "1":
        raise RuntimeError("SciPy was imported before SCIPY_ARRAY_API=1 was set")
    os.environ["SCIPY_ARRAY_API"] = "1"
    import sklearn
    sklearn.set_config(array_api_dispatch=True)
    out = {}
    for name in names or CASES:
        ctx = Ctx(dev)
        try:
            CASES[name](ctx)
            out[name] = (PASS, "", sorted(set(ctx.calls)), sorted(set(ctx.host_only)))
        except Exception as e:  # noqa: BLE001 - every failure is reported, with its traceback
            gap = expected_gaps.expected(e)    # a listed backend gap; any other error fails
            out[name] = (GAP, gap, [], []) if gap else (FAIL, traceback.format_exc(), [], [])
    return out

if __name__ == "__main__":
    results = run(sys.argv[1], sys.argv[2:] or None)
    print("RESULTS " + json.dumps(results))
