/* ruda._speedups: the Base array object, NumPy's array fields, the elementwise fast path (included by ruda/_speedups.c: one translation unit). */

/* ------------------------------------------------------------------------------------------ */
/* Base: the array object */

typedef struct {
    PyObject_HEAD
    PyObject *data;
    PyObject *device;
    PyObject *weakreflist;
} BaseObject;

static PyTypeObject BaseType;

#define IS_ARRAY(o) PyObject_TypeCheck((o), &BaseType)

static inline int
is_host(BaseObject *a)
{
    return a->device == CPU && a->data != NULL && Py_IS_TYPE(a->data, NDArray);
}

static int plain_layout = 0;   /* Array's instances are exactly BaseObject: allocate directly */

static BaseObject *
alloc_array(void)
{
    if (!plain_layout)
        return (BaseObject *)ArrayType->tp_alloc(ArrayType, 0);
    BaseObject *r = PyObject_GC_New(BaseObject, ArrayType);   /* increfs the heap type */
    if (r == NULL)
        return NULL;
    r->data = NULL;
    r->device = NULL;
    r->weakreflist = NULL;
    return r;
}

static PyObject *
wrap(PyObject *data)   /* steals data; a cpu Array of it */
{
    if (data == NULL)
        return NULL;
    BaseObject *r = alloc_array();
    if (r == NULL) {
        Py_DECREF(data);
        return NULL;
    }
    r->data = data;
    Py_INCREF(CPU);
    r->device = CPU;
    if (plain_layout)
        PyObject_GC_Track(r);
    return (PyObject *)r;
}

/* an ndarray for a ufunc's result: NumPy returns scalars from 0-d operations (host _fix) */
static PyObject *
native(PyObject *r)   /* steals r */
{
    if (r == NULL || Py_IS_TYPE(r, NDArray))
        return r;
    PyObject *a = PyObject_CallOneArg(np_asarray, r);
    Py_DECREF(r);
    return a;
}

static inline int
in_tuple(PyObject *item, PyObject *tup)
{
    if (tup == NULL)
        return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(tup);
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyTuple_GET_ITEM(tup, i) == item)
            return 1;
    return 0;
}

/* dtype argument dt as one of the NumPy dtypes of ``pairs`` (NumPy dtypes, then the public
   DType objects of the same dtypes in the same order: _dtypes.with_public), borrowed; NULL if
   it is none of them */
static PyObject *
pair_dtype(PyObject *dt, PyObject *pairs)
{
    Py_ssize_t n = PyTuple_GET_SIZE(pairs), half = n / 2;
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyTuple_GET_ITEM(pairs, i) == dt)
            return PyTuple_GET_ITEM(pairs, i % half);
    return NULL;
}

/* NumPy's array object (PyArrayObject_fields: NumPy's C ABI since 1.7, which its own macros
   PyArray_NDIM/DIMS/DESCR read): used only after setup() has checked it on a probe array, else
   the attributes are read through the object protocol. */
typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    Py_ssize_t *dimensions;
    Py_ssize_t *strides;
    PyObject *base;
    PyObject *descr;
    int flags;
} NPArrayFields;

static int fields_ok = 0;

#define MAX_DIMS 64

/* the dtype of an exact ndarray, borrowed (the array keeps it alive); NULL with an error set */
static inline PyObject *
nd_dtype(PyObject *a)
{
    if (fields_ok)
        return ((NPArrayFields *)a)->descr;
    PyObject *d = PyObject_GetAttr(a, s_dtype);
    Py_XDECREF(d);
    return d;
}

/* the shape of an exact ndarray into dims[MAX_DIMS]: the number of dimensions, -1 on error */
static int
nd_shape(PyObject *a, Py_ssize_t *dims)
{
    if (fields_ok) {
        NPArrayFields *f = (NPArrayFields *)a;
        if (f->nd < 0 || f->nd > MAX_DIMS) {
            PyErr_SetString(PyExc_ValueError, "too many dimensions");
            return -1;
        }
        for (int i = 0; i < f->nd; i++)
            dims[i] = f->dimensions[i];
        return f->nd;
    }
    PyObject *shape = PyObject_GetAttr(a, s_shape);
    if (shape == NULL)
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(shape);
    if (n > MAX_DIMS) {
        Py_DECREF(shape);
        PyErr_SetString(PyExc_ValueError, "too many dimensions");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        dims[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (dims[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(shape);
            return -1;
        }
    }
    Py_DECREF(shape);
    return (int)n;
}

/* same shape? 1 / 0, -1 on error */
static int
same_shape(PyObject *a, PyObject *b)
{
    if (fields_ok) {
        NPArrayFields *fa = (NPArrayFields *)a, *fb = (NPArrayFields *)b;
        if (fa->nd != fb->nd)
            return 0;
        for (int i = 0; i < fa->nd; i++)
            if (fa->dimensions[i] != fb->dimensions[i])
                return 0;
        return 1;
    }
    Py_ssize_t da[MAX_DIMS], db[MAX_DIMS];
    int na = nd_shape(a, da), nb = nd_shape(b, db);
    if (na < 0 || nb < 0)
        return -1;
    if (na != nb)
        return 0;
    for (int i = 0; i < na; i++)
        if (da[i] != db[i])
            return 0;
    return 1;
}

/* (Array, a heap subclass, visits its type in subtype_traverse before calling this) */
static int
Base_traverse(BaseObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->data);
    Py_VISIT(self->device);
    return 0;
}

static int
Base_clear(BaseObject *self)
{
    Py_CLEAR(self->data);
    Py_CLEAR(self->device);
    return 0;
}

static void
Base_dealloc(BaseObject *self)
{
    PyObject_GC_UnTrack(self);
    if (self->weakreflist != NULL)
        PyObject_ClearWeakRefs((PyObject *)self);
    Py_CLEAR(self->data);
    Py_CLEAR(self->device);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* tp_dealloc of ruda.Array itself (plain_layout): subtype_dealloc's work for a heap type that
   adds nothing to its base (no __del__, no slots, no dict), without its generic checks */
static void
Array_dealloc(BaseObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->weakreflist != NULL)
        PyObject_ClearWeakRefs((PyObject *)self);
    Py_CLEAR(self->data);
    Py_CLEAR(self->device);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyMemberDef Base_members[] = {
    {"_data", T_OBJECT_EX, offsetof(BaseObject, data), 0, NULL},
    {"_device", T_OBJECT_EX, offsetof(BaseObject, device), 0, NULL},
    {NULL}
};

/* --- elementwise fast path -------------------------------------------------------------- */

/* The Python scalar s as a 0-d array of dtype dt (backend.scalar), or the scalar itself where the
   ufunc's own conversion is exact (float64/complex128 with a float, int64 with an int). */
static PyObject *
host_scalar(PyObject *s, PyObject *dt)
{
    if ((dt == dt_float64 || dt == dt_complex128) && PyFloat_CheckExact(s)) {
        Py_INCREF(s);
        return s;
    }
    PyObject *args[2] = {s, dt};
    return PyObject_Vectorcall(np_asarray, args, 2, NULL);
}

/* x1 <op> x2 on host arrays where the Python function's fast path applies; NULL without an error
   set: not handled here (the caller runs the Python function). */
static PyObject *
fast_binary(int op, PyObject *x1, PyObject *x2)
{
    Op *o = &OPS[op];
    if (o->ufunc == NULL)
        return NULL;
    int a1 = IS_ARRAY(x1), a2 = IS_ARRAY(x2);
    PyObject *r;
    if (a1 && a2) {
        BaseObject *b1 = (BaseObject *)x1, *b2 = (BaseObject *)x2;
        if (!is_host(b1) || !is_host(b2))
            return NULL;
        PyObject *d1 = nd_dtype(b1->data), *d2 = nd_dtype(b2->data);
        if (d1 == NULL || d2 == NULL)
            goto fail;
        if (d1 != d2 || !in_tuple(d1, o->fast))
            return NULL;
        int eq = same_shape(b1->data, b2->data);
        if (eq <= 0) {
            if (eq < 0)
                goto fail;
            return NULL;
        }
        PyObject *args[2] = {b1->data, b2->data};
        return wrap(native(PyObject_Vectorcall(o->ufunc, args, 2, NULL)));
    }
    BaseObject *arr = (BaseObject *)(a1 ? x1 : x2);
    PyObject *s = a1 ? x2 : x1;
    PyObject *allowed;
    if (PyFloat_CheckExact(s))
        allowed = o->fast_float;
    else if (PyLong_CheckExact(s))
        allowed = o->fast_int;
    else
        return NULL;
    if (!is_host(arr))
        return NULL;
    PyObject *dt = nd_dtype(arr->data);
    if (dt == NULL)
        goto fail;
    if (!in_tuple(dt, allowed))
        return NULL;
    PyObject *sv = host_scalar(s, dt);
    if (sv == NULL)
        goto overflow;
    PyObject *args[2];
    args[a1 ? 0 : 1] = arr->data;
    args[a1 ? 1 : 0] = sv;
    r = PyObject_Vectorcall(o->ufunc, args, 2, NULL);
    Py_DECREF(sv);
    if (r == NULL)
        goto overflow;
    return wrap(native(r));
overflow:   /* the Python function catches OverflowError here and takes its general path */
    if (PyErr_ExceptionMatches(PyExc_OverflowError))
        PyErr_Clear();
    return NULL;
fail:
    PyErr_Clear();
    return NULL;
}

static PyObject *
call2(PyObject *fn, PyObject *a, PyObject *b)
{
    PyObject *args[2] = {a, b};
    return PyObject_Vectorcall(fn, args, 2, NULL);
}
