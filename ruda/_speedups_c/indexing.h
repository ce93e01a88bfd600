/* ruda._speedups: the indexing fast path and the Base type object (included by ruda/_speedups.c: one translation unit). */

/* --- indexing fast path ------------------------------------------------------------------ */

/* A slice of exact ints / None with a nonzero step (ruda._indexing._simple's slice rule). */
static int
simple_slice(PyObject *k)
{
    PySliceObject *s = (PySliceObject *)k;
    if (!(s->start == Py_None || PyLong_CheckExact(s->start)))
        return 0;
    if (!(s->stop == Py_None || PyLong_CheckExact(s->stop)))
        return 0;
    if (s->step == Py_None)
        return 1;
    if (!PyLong_CheckExact(s->step))
        return 0;
    int overflow;
    long v = PyLong_AsLongAndOverflow(s->step, &overflow);
    return v != 0 || overflow != 0;
}

/* Is key an int / simple slice / Ellipsis, or a tuple of those, valid for an ndarray of the given
   shape (the checks of ruda._indexing.normalize_key, which passes such keys through unchanged)?
   Returns 1 (valid: data[key] cannot fail), 0 (let the Python code decide), -1 (error). */
static int
simple_key(PyObject *data, PyObject *key)
{
    PyObject *single[1];
    PyObject **items;
    Py_ssize_t n;
    if (PyTuple_CheckExact(key)) {
        items = &PyTuple_GET_ITEM(key, 0);
        n = PyTuple_GET_SIZE(key);
    } else {
        single[0] = key;
        items = single;
        n = 1;
    }
    Py_ssize_t used = 0, ell = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = items[i];
        if (k == Py_Ellipsis) {
            if (ell >= 0)
                return 0;
            ell = i;
        } else if (PyLong_CheckExact(k) || (PySlice_Check(k) && simple_slice(k))) {
            used++;
        } else {
            return 0;
        }
    }
    Py_ssize_t dims[MAX_DIMS];
    int nd = nd_shape(data, dims);
    if (nd < 0)
        return -1;
    Py_ssize_t ndim = nd;
    int ok = used <= ndim;
    for (Py_ssize_t i = 0, pos = 0; ok && i < n; i++) {
        PyObject *k = items[i];
        if (k == Py_Ellipsis) {
            pos = ndim - (used - pos);   /* the entries after it index the last dimensions */
            continue;
        }
        if (PyLong_CheckExact(k)) {
            Py_ssize_t v = PyLong_AsSsize_t(k);
            if (v == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                ok = 0;
                break;
            }
            if (!(-dims[pos] <= v && v < dims[pos]))
                ok = 0;
        }
        pos++;
    }
    return ok;
}

/* data[key] for a valid simple key as an ndarray: a key of integers alone gets a trailing
   Ellipsis, so NumPy returns a 0-d view rather than a scalar */
static PyObject *
simple_getitem(PyObject *data, PyObject *key)
{
    if (!PyLong_CheckExact(key) && !PyTuple_CheckExact(key))   /* a slice, Ellipsis */
        return native(PyObject_GetItem(data, key));
    PyObject *full;
    if (PyLong_CheckExact(key)) {
        /* (key, Ellipsis) in a tuple kept for reuse while nothing else holds it */
        static PyObject *pair = NULL;
        if (pair != NULL && Py_REFCNT(pair) == 1) {
            PyObject *old = PyTuple_GET_ITEM(pair, 0);
            Py_INCREF(key);
            PyTuple_SET_ITEM(pair, 0, key);
            Py_DECREF(old);
        } else {
            Py_XDECREF(pair);
            pair = PyTuple_Pack(2, key, Py_Ellipsis);
            if (pair == NULL)
                return NULL;
        }
        Py_INCREF(pair);   /* held while in use: a reentrant call makes its own */
        PyObject *r = PyObject_GetItem(data, pair);
        Py_DECREF(pair);
        return native(r);
    } else {
        Py_ssize_t n = PyTuple_GET_SIZE(key);
        for (Py_ssize_t i = 0; i < n; i++)
            if (!PyLong_CheckExact(PyTuple_GET_ITEM(key, i)))
                return native(PyObject_GetItem(data, key));
        full = PyTuple_New(n + 1);
        if (full == NULL)
            return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *k = PyTuple_GET_ITEM(key, i);
            Py_INCREF(k);
            PyTuple_SET_ITEM(full, i, k);
        }
        Py_INCREF(Py_Ellipsis);
        PyTuple_SET_ITEM(full, n, Py_Ellipsis);
    }
    if (full == NULL)
        return NULL;
    PyObject *r = PyObject_GetItem(data, full);
    Py_DECREF(full);
    return native(r);
}

/* the length of axis 0 of an ndarray; -1 for a 0-d array */
static inline Py_ssize_t
axis0(PyObject *data)
{
    if (fields_ok) {
        NPArrayFields *f = (NPArrayFields *)data;
        return f->nd > 0 ? f->dimensions[0] : -1;
    }
    Py_ssize_t n = PyObject_Size(data);   /* TypeError for a 0-d array */
    if (n < 0)
        PyErr_Clear();
    return n;
}

/* a lone int or slice on an array of at least one dimension: only the length of axis 0 matters */
static int
lone_key(PyObject *data, PyObject *key)
{
    if (PySlice_Check(key))
        return simple_slice(key) && axis0(data) >= 0;
    Py_ssize_t v = PyLong_AsSsize_t(key);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    Py_ssize_t n = axis0(data);
    return n >= 0 && -n <= v && v < n;
}

static inline int
check_key(PyObject *data, PyObject *key)
{
    if (PyLong_CheckExact(key) || PySlice_Check(key))
        return lone_key(data, key);
    return simple_key(data, key);
}

static PyObject *
Base_subscript(PyObject *self, PyObject *key)
{
    BaseObject *a = (BaseObject *)self;
    if (py_getitem == NULL) {
        PyErr_SetString(PyExc_TypeError, "'Array' object is not subscriptable");
        return NULL;
    }
    if (is_host(a)) {
        int ok = check_key(a->data, key);
        if (ok < 0)
            return NULL;
        if (ok)
            return wrap(simple_getitem(a->data, key));
        if (IS_ARRAY(key) && is_host((BaseObject *)key)) {
            /* an integer or boolean index array: NumPy checks it as ruda does, and where it
               raises, the Python code raises ruda's error */
            PyObject *kd = ((BaseObject *)key)->data;
            PyObject *dt = nd_dtype(kd);
            if (dt == NULL)
                return NULL;
            if (in_tuple(dt, index_dtypes)) {
                PyObject *r = native(PyObject_GetItem(a->data, kd));
                if (r != NULL)
                    return wrap(r);
                if (!PyErr_ExceptionMatches(PyExc_IndexError))
                    return NULL;
                PyErr_Clear();
            }
        }
    }
    return call2(py_getitem, self, key);
}

/* value as something to store in an ndarray of dtype dt without changing what is stored, or NULL
   without an error: let the Python code handle it. */
static PyObject *
store_value(PyObject *value, PyObject *dt)
{
    if (IS_ARRAY(value)) {
        BaseObject *v = (BaseObject *)value;
        if (!is_host(v))
            return NULL;
        PyObject *vd = nd_dtype(v->data);
        if (vd == NULL) {
            PyErr_Clear();
            return NULL;
        }
        if (vd != dt)
            return NULL;
        Py_INCREF(v->data);
        return v->data;
    }
    if (PyFloat_CheckExact(value)) {
        if (!in_tuple(dt, set_float_dtypes))
            return NULL;
        if (dt == dt_float64 || dt == dt_complex128) {
            Py_INCREF(value);
            return value;
        }
    } else if (PyLong_CheckExact(value)) {
        if (!in_tuple(dt, set_int_dtypes))
            return NULL;
        if (dt == dt_int64) {
            int overflow;
            (void)PyLong_AsLongLongAndOverflow(value, &overflow);
            if (overflow == 0) {
                Py_INCREF(value);
                return value;
            }
        }
    } else {
        return NULL;
    }
    PyObject *args[2] = {value, dt};
    PyObject *r = PyObject_Vectorcall(np_asarray, args, 2, NULL);
    if (r == NULL)
        PyErr_Clear();   /* out of range: the Python code raises ruda's error */
    return r;
}

static int
Base_ass_subscript(PyObject *self, PyObject *key, PyObject *value)
{
    BaseObject *a = (BaseObject *)self;
    if (value == NULL) {   /* del x[k]: Array has no __delitem__ */
        PyErr_SetString(PyExc_AttributeError, "__delitem__");
        return -1;
    }
    if (py_setitem == NULL) {
        PyErr_SetString(PyExc_TypeError, "'Array' object does not support item assignment");
        return -1;
    }
    if (is_host(a)) {
        int ok = check_key(a->data, key);
        if (ok < 0)
            return -1;
        if (ok) {
            PyObject *dt = nd_dtype(a->data);
            if (dt == NULL)
                return -1;
            PyObject *val = store_value(value, dt);
            if (val != NULL) {
                int rc = PyObject_SetItem(a->data, key, val);
                Py_DECREF(val);
                if (rc == 0)
                    return 0;
                /* not stored (read-only, shapes that do not broadcast): the Python code raises
                   its own error; such failures write nothing, so running it again is safe */
                if (!PyErr_ExceptionMatches(PyExc_ValueError) &&
                        !PyErr_ExceptionMatches(PyExc_IndexError))
                    return -1;
                PyErr_Clear();
            }
        }
    }
    PyObject *args[3] = {self, key, value};
    PyObject *r = PyObject_Vectorcall(py_setitem, args, 3, NULL);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

static PyMappingMethods Base_as_mapping = {
    .mp_subscript = Base_subscript,
    .mp_ass_subscript = Base_ass_subscript,
};

static PyTypeObject BaseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ruda._speedups.Base",
    .tp_basicsize = sizeof(BaseObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "C base of ruda.Array: the slots and the host fast paths.",
    .tp_traverse = (traverseproc)Base_traverse,
    .tp_clear = (inquiry)Base_clear,
    .tp_dealloc = (destructor)Base_dealloc,
    .tp_weaklistoffset = offsetof(BaseObject, weakreflist),
    .tp_members = Base_members,
    .tp_as_number = &Base_as_number,
    .tp_as_mapping = &Base_as_mapping,
    .tp_as_buffer = &Base_as_buffer,
};
