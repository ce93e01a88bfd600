/* ruda._speedups: module functions: the fast paths of asarray, reshape, ... (included by ruda/_speedups.c: one translation unit). */

/* --- module functions -------------------------------------------------------------------- */

/* Is ruda._devices.default() the cpu Device?  Its rules read in C: the innermost
   `with default_device(...)` block (a context variable), else the default outside blocks, which
   ruda._devices tells fixed_default() whenever it changes (watch_default): a Device, None (cpu),
   or RUDA_DEVICE's unresolved spelling, which is asked of the Python function. */
static PyObject *py_default_device = NULL;   /* ruda._devices.default */
static PyObject *dev_block = NULL;           /* ruda._devices.block_default */
static PyObject *fixed_dev = NULL;           /* the default outside blocks (NULL: None) */

static int
default_is_cpu(void)
{
    if (py_default_device == NULL)
        return 0;
    PyObject *d = NULL;
    if (PyContextVar_Get(dev_block, Py_None, &d) < 0) {
        PyErr_Clear();
        return 0;
    }
    Py_DECREF(d);   /* the context keeps it alive */
    if (d == Py_None) {
        if (fixed_dev == NULL || fixed_dev == CPU)
            return 1;
        if (!PyUnicode_Check(fixed_dev))
            return 0;   /* another Device */
    } else {
        return d == CPU;
    }
    d = PyObject_CallNoArgs(py_default_device);
    if (d == NULL) {
        PyErr_Clear();
        return 0;
    }
    Py_DECREF(d);
    return d == CPU;
}

/* asarray(ndarray) / asarray(cpu Array) with no other argument */
static PyObject *
asarray_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    FuncObject *f = (FuncObject *)self;
    if (PyVectorcall_NARGS(nargsf) == 1 && kwnames == NULL) {
        PyObject *obj = args[0];
        if (Py_IS_TYPE(obj, ArrayType)) {   /* _asarray_array(x, None, None, None) returns x */
            Py_INCREF(obj);
            return obj;
        }
        if (Py_IS_TYPE(obj, NDArray)) {
            PyObject *dt = nd_dtype(obj);
            if (dt == NULL)
                return NULL;
            if (in_tuple(dt, f->extra) && default_is_cpu()) {
                Py_INCREF(obj);
                return wrap(obj);
            }
        }
    }
    return fallback(f, args, nargsf, kwnames);
}

/* permute_dims(x, axes) with axes a tuple of exact ints forming a permutation */
static PyObject *
permute_dims_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    FuncObject *f = (FuncObject *)self;
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL && Py_IS_TYPE(args[0], ArrayType)
            && is_host((BaseObject *)args[0]) && PyTuple_CheckExact(args[1])) {
        PyObject *data = ((BaseObject *)args[0])->data, *axes = args[1];
        Py_ssize_t dims[MAX_DIMS];
        int nd = nd_shape(data, dims);
        if (nd < 0)
            return NULL;
        Py_ssize_t ndim = nd, n = PyTuple_GET_SIZE(axes);
        if (n == ndim) {
            char seen[MAX_DIMS] = {0};
            int ok = 1;
            PyObject *norm = PyTuple_New(n);
            if (norm == NULL)
                return NULL;
            for (Py_ssize_t i = 0; i < n && ok; i++) {
                PyObject *k = PyTuple_GET_ITEM(axes, i);
                if (!PyLong_CheckExact(k)) {
                    ok = 0;
                    break;
                }
                Py_ssize_t v = PyLong_AsSsize_t(k);
                if (v == -1 && PyErr_Occurred()) {
                    PyErr_Clear();
                    ok = 0;
                    break;
                }
                if (!(-ndim <= v && v < ndim)) {
                    ok = 0;
                    break;
                }
                if (v < 0)
                    v += ndim;
                if (seen[v]) {
                    ok = 0;
                    break;
                }
                seen[v] = 1;
                PyObject *pv = PyLong_FromSsize_t(v);
                if (pv == NULL) {
                    Py_DECREF(norm);
                    return NULL;
                }
                PyTuple_SET_ITEM(norm, i, pv);
            }
            if (ok) {
                PyObject *margs[3] = {NULL, data, norm};
                PyObject *r = PyObject_VectorcallMethod(s_transpose, margs + 1,
                                                        2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
                Py_DECREF(norm);
                return wrap(r);
            }
            Py_DECREF(norm);
        }
    }
    return fallback(f, args, nargsf, kwnames);
}

/* a shape argument (an exact int, or a tuple of exact ints) of non-negative sizes (and at most
   one -1 where allow_unknown), returned with a new reference, and the product of its sizes; NULL
   without an error: not a simple shape (the Python code decides) */
static PyObject *
simple_shape(PyObject *shape, int allow_unknown, Py_ssize_t *size, int *unknown)
{
    PyObject *t = shape;
    PyObject **items;
    Py_ssize_t n;
    if (PyLong_CheckExact(shape)) {        /* NumPy takes a lone int as a 1-D shape */
        items = &t;
        n = 1;
    } else if (PyTuple_CheckExact(shape)) {
        items = &PyTuple_GET_ITEM(shape, 0);
        n = PyTuple_GET_SIZE(shape);
    } else {
        return NULL;
    }
    Py_INCREF(t);
    Py_ssize_t prod = 1;
    int unk = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = items[i];
        if (!PyLong_CheckExact(k))
            goto no;
        Py_ssize_t v = PyLong_AsSsize_t(k);
        if (v == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            goto no;
        }
        if (v == -1 && allow_unknown) {
            if (unk++)
                goto no;
            continue;
        }
        if (v < 0)
            goto no;
        if (v != 0 && prod > PY_SSIZE_T_MAX / v)
            goto no;
        prod *= v;
    }
    *size = prod;
    if (unknown)
        *unknown = unk;
    return t;
no:
    Py_DECREF(t);
    return NULL;
}

/* the keyword arguments of a vectorcall as (dtype, device, copy); 0 if any other is present */
static int
kwargs3(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **dtype,
        PyObject **device, PyObject **copy)
{
    if (kwnames == NULL)
        return 1;
    Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < nk; i++) {
        PyObject *k = PyTuple_GET_ITEM(kwnames, i), *v = args[nargs + i];
        if (dtype && PyUnicode_CompareWithASCIIString(k, "dtype") == 0)
            *dtype = v;
        else if (device && PyUnicode_CompareWithASCIIString(k, "device") == 0)
            *device = v;
        else if (copy && PyUnicode_CompareWithASCIIString(k, "copy") == 0)
            *copy = v;
        else
            return 0;
    }
    return 1;
}

/* reshape(x, shape) / reshape(x, shape, copy=None): ruda._manipulation.reshape's checks, then
   ndarray.reshape (NumPy's reshape with copy=None) */
static PyObject *
reshape_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    FuncObject *f = (FuncObject *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *copy = Py_None;
    if (nargs == 2 && kwargs3(args, nargs, kwnames, NULL, NULL, &copy) && copy == Py_None
            && Py_IS_TYPE(args[0], ArrayType) && is_host((BaseObject *)args[0])) {
        PyObject *data = ((BaseObject *)args[0])->data;
        Py_ssize_t known;
        int unknown;
        PyObject *shape = simple_shape(args[1], 1, &known, &unknown);
        if (shape != NULL) {
            Py_ssize_t dims[MAX_DIMS], size = 1;
            int nd = nd_shape(data, dims);
            for (int i = 0; i < nd; i++)
                size *= dims[i];   /* NumPy keeps an array's size within Py_ssize_t */
            if (nd < 0)
                PyErr_Clear();
            else if (unknown ? (known != 0 && size % known == 0) : known == size) {
                PyObject *margs[3] = {NULL, data, shape};
                PyObject *r = PyObject_VectorcallMethod(s_reshape, margs + 1,
                                                        2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
                Py_DECREF(shape);
                if (r != NULL)
                    return wrap(r);
                PyErr_Clear();   /* NumPy's refusal: the Python code words the error */
                return fallback(f, args, nargsf, kwnames);
            }
            Py_DECREF(shape);
        }
    }
    return fallback(f, args, nargsf, kwnames);
}

/* zeros / empty / ones(shape, dtype=..., device=None) with the cpu as default device: extra is
   (the NumPy function, the dtypes taken as given (pairs: pair_dtype), the default dtype) */
static PyObject *
filled_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    FuncObject *f = (FuncObject *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *dtype = Py_None, *device = Py_None;
    if (nargs == 1 && kwargs3(args, nargs, kwnames, &dtype, &device, NULL)
            && device == Py_None) {
        PyObject *npfn = PyTuple_GET_ITEM(f->extra, 0);
        PyObject *dtypes = PyTuple_GET_ITEM(f->extra, 1);
        if (dtype == Py_None)
            dtype = PyTuple_GET_ITEM(f->extra, 2);
        dtype = pair_dtype(dtype, dtypes);
        if (dtype != NULL && default_is_cpu()) {
            Py_ssize_t size;
            PyObject *shape = simple_shape(args[0], 0, &size, NULL);
            if (shape != NULL) {
                /* NumPy parses a lone int and its own default dtype (float64) fastest */
                PyObject *cargs[2] = {shape, dtype};
                PyObject *r = PyObject_Vectorcall(npfn, cargs, dtype == dt_float64 ? 1 : 2, NULL);
                Py_DECREF(shape);
                if (r != NULL)
                    return wrap(native(r));
                PyErr_Clear();   /* e.g. too large: the Python code raises */
            }
        }
    }
    return fallback(f, args, nargsf, kwnames);
}

/* astype(x, dtype): a copy cast with ndarray.astype; extra is (dtypes (pairs: pair_dtype),
   complex dtypes) */
static PyObject *
astype_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    FuncObject *f = (FuncObject *)self;
    PyObject *to;
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL && Py_IS_TYPE(args[0], ArrayType)
            && is_host((BaseObject *)args[0])
            && (to = pair_dtype(args[1], PyTuple_GET_ITEM(f->extra, 0))) != NULL) {
        PyObject *data = ((BaseObject *)args[0])->data;
        PyObject *dt = nd_dtype(data);
        if (dt == NULL)
            return NULL;
        PyObject *cplx = PyTuple_GET_ITEM(f->extra, 1);
        if (!in_tuple(dt, cplx) || in_tuple(to, cplx)) {   /* else the Python error */
            PyObject *margs[3] = {NULL, data, to};
            return wrap(PyObject_VectorcallMethod(s_astype, margs + 1,
                                                  2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL));
        }
    }
    return fallback(f, args, nargsf, kwnames);
}

/* matmul(x1, x2): two host arrays of one dtype of extra (numeric), 1-D or 2-D, whose contracted
   dimensions agree (no batch dimensions to broadcast); extra is (dtypes, numpy.matmul) */
static PyObject *
matmul_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    FuncObject *f = (FuncObject *)self;
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL && Py_IS_TYPE(args[0], ArrayType)
            && Py_IS_TYPE(args[1], ArrayType) && is_host((BaseObject *)args[0])
            && is_host((BaseObject *)args[1])) {
        PyObject *a = ((BaseObject *)args[0])->data, *b = ((BaseObject *)args[1])->data;
        PyObject *da = nd_dtype(a), *db = nd_dtype(b);
        if (da == NULL || db == NULL)
            return NULL;
        Py_ssize_t sa[MAX_DIMS], sb[MAX_DIMS];
        int na = nd_shape(a, sa), nb = nd_shape(b, sb);
        if (na < 0 || nb < 0)
            return NULL;
        if (da == db && in_tuple(da, PyTuple_GET_ITEM(f->extra, 0)) && na >= 1 && na <= 2
                && nb >= 1 && nb <= 2 && sa[na - 1] == (nb == 1 ? sb[0] : sb[nb - 2])) {
            PyObject *margs[2] = {a, b};
            return wrap(native(PyObject_Vectorcall(PyTuple_GET_ITEM(f->extra, 1), margs, 2, NULL)));
        }
    }
    return fallback(f, args, nargsf, kwnames);
}

/* where(condition, x1, x2): three host arrays of one shape, a bool condition, x1 and x2 of one
   dtype of extra; extra is (dtypes, bool dtype, numpy.where) */
static PyObject *
where_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    FuncObject *f = (FuncObject *)self;
    if (PyVectorcall_NARGS(nargsf) == 3 && kwnames == NULL) {
        for (int i = 0; i < 3; i++)
            if (!Py_IS_TYPE(args[i], ArrayType) || !is_host((BaseObject *)args[i]))
                return fallback(f, args, nargsf, kwnames);
        PyObject *c = ((BaseObject *)args[0])->data, *a = ((BaseObject *)args[1])->data,
                 *b = ((BaseObject *)args[2])->data;
        PyObject *dc = nd_dtype(c), *da = nd_dtype(a), *db = nd_dtype(b);
        if (dc == NULL || da == NULL || db == NULL)
            return NULL;
        if (dc == PyTuple_GET_ITEM(f->extra, 1) && da == db
                && in_tuple(da, PyTuple_GET_ITEM(f->extra, 0))) {
            int s1 = same_shape(c, a), s2 = s1 > 0 ? same_shape(a, b) : s1;
            if (s1 < 0 || s2 < 0)
                return NULL;
            if (s1 && s2) {
                PyObject *wargs[3] = {c, a, b};
                return wrap(native(PyObject_Vectorcall(PyTuple_GET_ITEM(f->extra, 2), wargs, 3,
                                                       NULL)));
            }
        }
    }
    return fallback(f, args, nargsf, kwnames);
}

/* sort(x) of a host array of at least one dimension with a dtype of extra (real numeric), along
   the last axis, ascending and stable: np.sort(x, axis=-1, kind="stable") spelled out (a copy in
   the same memory order, sorted in place); extra is (dtypes, kwnames ("order",), ("axis", "kind"),
   "K", "stable") */
static PyObject *
sort_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    FuncObject *f = (FuncObject *)self;
    if (PyVectorcall_NARGS(nargsf) == 1 && kwnames == NULL && Py_IS_TYPE(args[0], ArrayType)
            && is_host((BaseObject *)args[0])) {
        PyObject *x = ((BaseObject *)args[0])->data;
        PyObject *dt = nd_dtype(x);
        Py_ssize_t dims[MAX_DIMS];
        int nd = nd_shape(x, dims);
        if (dt == NULL || nd < 0)
            return NULL;
        if (nd >= 1 && in_tuple(dt, PyTuple_GET_ITEM(f->extra, 0))) {
            PyObject *cargs[3] = {NULL, x, PyTuple_GET_ITEM(f->extra, 3)};
            PyObject *r = PyObject_VectorcallMethod(s_copy, cargs + 1,
                                                    1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                                    PyTuple_GET_ITEM(f->extra, 1));
            if (r == NULL)
                return NULL;
            PyObject *axis = PyLong_FromLong(nd - 1);
            if (axis == NULL) {
                Py_DECREF(r);
                return NULL;
            }
            PyObject *sargs[4] = {NULL, r, axis, PyTuple_GET_ITEM(f->extra, 4)};
            PyObject *ok = PyObject_VectorcallMethod(s_sort, sargs + 1,
                                                     1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                                     PyTuple_GET_ITEM(f->extra, 2));
            Py_DECREF(axis);
            if (ok == NULL) {
                Py_DECREF(r);
                return NULL;
            }
            Py_DECREF(ok);
            return wrap(native(r));
        }
    }
    return fallback(f, args, nargsf, kwnames);
}
