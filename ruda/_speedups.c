/* ruda._speedups: the optional C accelerator for host (cpu) arrays.
 *
 * ruda works without it (RUDA_PURE_PYTHON=1, or no compiler at install): every function here is a
 * fast path for one common case of a Python implementation, and hands every other case to that
 * Python implementation unchanged, so results and errors are the Python code's.  Fast paths apply
 * only to host arrays: the device is ruda's cpu Device and the data an exact numpy.ndarray.
 *
 *   Base        the C base of ruda.Array: slots _data, _device (and weak references); number
 *               slots (+ - * / // % ** & | ^ << >>, reflected and in-place, with temporary
 *               elision for + - * /) and [] get/set.
 *   binary      wraps an elementwise function (ruda.add, ...) as a C callable with its fast path.
 *   function    the same for asarray, reshape, permute_dims, zeros/ones/empty, astype, matmul,
 *               where and sort (a Function object: __wrapped__ is the Python function).
 *   new         Array construction without a Python frame.
 *   crc32       zlib.crc32 by carry-less multiply folding (ruda.data's chunk checks).
 *
 * Only NumPy's Python-level API is used (no NumPy headers): ufuncs and methods are called through
 * the object protocol.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* ------------------------------------------------------------------------------------------ */
/* state registered from Python (ruda._array / ruda._operators / ...) */

static PyTypeObject *ArrayType = NULL;   /* ruda.Array (a Python subclass of Base) */
static PyObject *CPU = NULL;             /* ruda's cpu Device */
static PyTypeObject *NDArray = NULL;     /* numpy.ndarray */
static PyObject *np_asarray = NULL;      /* numpy.asarray */
static PyObject *py_getitem = NULL;      /* ruda._indexing.getitem */
static PyObject *py_setitem = NULL;      /* ruda._indexing.setitem */
static PyObject *set_int_dtypes = NULL;  /* dtypes that store a Python int as is (kinds iufc) */
static PyObject *set_float_dtypes = NULL; /* ... a Python float (kinds fc) */
static PyObject *dt_float64 = NULL, *dt_int64 = NULL, *dt_complex128 = NULL;
static PyObject *index_dtypes = NULL;    /* tuple: integer and boolean dtypes (index arrays) */

static PyObject *s_dtype, *s_shape, *s_transpose, *s_reshape,
    *s_astype, *s_size, *s_copy, *s_sort;

#define N_OPS 28
static const char *OP_NAMES[N_OPS] = {
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow", "bitwise_and",
    "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
    "atan2", "copysign", "equal", "greater", "greater_equal", "hypot", "less", "less_equal",
    "logaddexp", "logical_and", "logical_or", "logical_xor", "maximum", "minimum", "nextafter",
    "not_equal",
};
enum { OP_ADD, OP_SUB, OP_MUL, OP_TRUEDIV, OP_FLOORDIV, OP_MOD, OP_POW, OP_AND, OP_OR, OP_XOR,
       OP_LSHIFT, OP_RSHIFT };

typedef struct {
    PyObject *fn;          /* the Python function fn(x1, x2) */
    PyObject *reflected;   /* Array.__rop__ in Python (None until registered) */
    PyObject *inplace;     /* Array.__iop__ in Python */
    PyObject *ufunc;       /* host implementation taking two ndarrays (NULL: no fast path) */
    PyObject *fast;        /* tuple of dtypes: same dtype and shape needs no promotion */
    PyObject *fast_int;    /* tuple of array dtypes that take a Python int as their own dtype */
    PyObject *fast_float;  /* ... a Python float */
} Op;

static Op OPS[N_OPS];

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

/* --- temporary elision -------------------------------------------------------------------
   `x * 2.5 + 1.0`: the interpreter passes the temporary `x * 2.5` to `+` holding the only
   reference, and drops it afterwards, so `+` may write its result into it (as NumPy does for its
   own temporaries).  Done only when all of these hold: the left operand is a ruda Array whose
   only reference is the caller's (refcount 1, no weak references), the caller is the Python
   interpreter itself (the C stack between the interpreter loop and here is CPython's and this
   module's: a C extension holding a single reference it still uses is never elided), its data is
   an ndarray that owns its memory with no other reference (no views, no buffer exports),
   writeable, of >= 64 Ki elements of a float or complex dtype, and the op is + - * / with the
   fast path's operands.  Linux/glibc only (backtrace, dladdr); elsewhere never.  Not on Python
   3.14+, whose interpreter may push a local variable onto its stack without a new reference
   (LOAD_FAST_BORROW): refcount 1 no longer proves the operand is a temporary there; nor on
   free-threaded builds, where another thread may take a reference meanwhile. */
#if defined(__linux__) && defined(__GLIBC__) && PY_VERSION_HEX < 0x030E0000 \
    && !defined(Py_GIL_DISABLED)
#include <execinfo.h>
#include <dlfcn.h>
#define CAN_ELIDE 1
#else
#define CAN_ELIDE 0
#endif

static PyObject *elide_dtypes = NULL;   /* tuple: float and complex dtypes */
static PyObject *s_out_kw = NULL;       /* ("out",) */

#if CAN_ELIDE
static void *python_base = NULL, *own_base = NULL, *eval_frame = NULL;

static int
elision_init(void)
{
    Dl_info info;
    if (!dladdr((void *)&PyNumber_Add, &info))
        return 0;
    python_base = info.dli_fbase;
    if (!dladdr((void *)&elision_init, &info))
        return 0;
    own_base = info.dli_fbase;
    eval_frame = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    if (eval_frame == NULL || !dladdr(eval_frame, &info) || info.dli_fbase != python_base)
        return 0;
    return 1;
}

static int
called_by_interpreter(void)
{
    void *frames[24];
    int n = backtrace(frames, 24);
    for (int i = 1; i < n; i++) {
        Dl_info info;
        if (!dladdr(frames[i], &info))
            return 0;
        if (info.dli_fbase == own_base)
            continue;
        if (info.dli_fbase != python_base)
            return 0;   /* another library's C code called the operator */
        if (info.dli_saddr == eval_frame)
            return 1;
    }
    return 0;
}
#endif

#define WRITEABLE_OWNDATA 0x0404   /* NPY_ARRAY_WRITEABLE | NPY_ARRAY_OWNDATA */
#define MIN_ELIDE 65536

static PyObject *
elide(int op, PyObject *x1, PyObject *x2)
{
#if CAN_ELIDE
    if (elide_dtypes == NULL || !fields_ok || !Py_IS_TYPE(x1, ArrayType) || Py_REFCNT(x1) != 1)
        return NULL;
    if (!(op == OP_ADD || op == OP_SUB || op == OP_MUL || op == OP_TRUEDIV) || OPS[op].ufunc == NULL)
        return NULL;
    BaseObject *a = (BaseObject *)x1;
    if (!is_host(a) || a->weakreflist != NULL || Py_REFCNT(a->data) != 1)
        return NULL;
    NPArrayFields *f = (NPArrayFields *)a->data;
    if (f->base != NULL || (f->flags & WRITEABLE_OWNDATA) != WRITEABLE_OWNDATA)
        return NULL;
    Py_ssize_t size = 1;
    for (int i = 0; i < f->nd; i++)
        size *= f->dimensions[i];
    if (size < MIN_ELIDE || !in_tuple(f->descr, elide_dtypes))
        return NULL;
    int scalar = 0;
    if (IS_ARRAY(x2)) {
        BaseObject *b = (BaseObject *)x2;
        if (!is_host(b) || nd_dtype(b->data) != f->descr || !in_tuple(f->descr, OPS[op].fast)
                || same_shape(a->data, b->data) != 1)
            return NULL;
    } else if ((PyFloat_CheckExact(x2) && in_tuple(f->descr, OPS[op].fast_float))
               || (PyLong_CheckExact(x2) && in_tuple(f->descr, OPS[op].fast_int))) {
        scalar = 1;
    } else {
        return NULL;
    }
    if (python_base == NULL && !elision_init()) {
        Py_CLEAR(elide_dtypes);   /* cannot check the caller: never elide */
        return NULL;
    }
    if (!called_by_interpreter())
        return NULL;
    PyObject *other;
    if (scalar) {
        other = host_scalar(x2, f->descr);
        if (other == NULL) {   /* out of range: the fast path and the Python code decide */
            PyErr_Clear();
            return NULL;
        }
    } else {
        other = ((BaseObject *)x2)->data;
        Py_INCREF(other);
    }
    PyObject *args[3] = {a->data, other, a->data};
    PyObject *r = PyObject_Vectorcall(OPS[op].ufunc, args, 2, s_out_kw);
    Py_DECREF(other);
    if (r == NULL)
        return NULL;   /* the same ufunc error the fast path raises; the temporary is dropped */
    Py_DECREF(r);
    Py_INCREF(x1);
    return x1;
#else
    return NULL;
#endif
}

/* the number slot: x1 is ours (forward: Array.__op__ is the function) or x2 is (reflected) */
static PyObject *
number_op(int op, PyObject *x1, PyObject *x2)
{
    Op *o = &OPS[op];
    if (o->fn == NULL)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *r = elide(op, x1, x2);
    if (r != NULL || PyErr_Occurred())
        return r;
    r = fast_binary(op, x1, x2);
    if (r != NULL || PyErr_Occurred())
        return r;
    if (IS_ARRAY(x1))
        return call2(o->fn, x1, x2);
    if (o->reflected == NULL)
        Py_RETURN_NOTIMPLEMENTED;
    return call2(o->reflected, x2, x1);
}

static PyObject *
inplace_op(int op, PyObject *self, PyObject *other)
{
    Op *o = &OPS[op];
    if (o->inplace == NULL)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *r = fast_binary(op, self, other);
    if (r == NULL) {
        if (PyErr_Occurred())
            return NULL;
        return call2(o->inplace, self, other);
    }
    /* the fast path keeps dtype and shape; store like the Python version: self[...] = result */
    PyObject *data = ((BaseObject *)self)->data;
    PyObject *rdata = ((BaseObject *)r)->data;
    PyObject *d1 = nd_dtype(data), *d2 = nd_dtype(rdata);
    if (d1 == NULL || d2 == NULL || d1 != d2) {
        Py_DECREF(r);
        if (PyErr_Occurred())
            return NULL;
        return call2(o->inplace, self, other);
    }
    int rc = PyObject_SetItem(data, Py_Ellipsis, rdata);
    Py_DECREF(r);
    if (rc < 0)
        return NULL;
    Py_INCREF(self);
    return self;
}

#define NUMBER_SLOTS(NAME, OP)                                                               \
    static PyObject *nb_##NAME(PyObject *a, PyObject *b) { return number_op(OP, a, b); }     \
    static PyObject *nb_i##NAME(PyObject *a, PyObject *b) { return inplace_op(OP, a, b); }

NUMBER_SLOTS(add, OP_ADD)
NUMBER_SLOTS(sub, OP_SUB)
NUMBER_SLOTS(mul, OP_MUL)
NUMBER_SLOTS(truediv, OP_TRUEDIV)
NUMBER_SLOTS(floordiv, OP_FLOORDIV)
NUMBER_SLOTS(mod, OP_MOD)
NUMBER_SLOTS(and, OP_AND)
NUMBER_SLOTS(or, OP_OR)
NUMBER_SLOTS(xor, OP_XOR)
NUMBER_SLOTS(lshift, OP_LSHIFT)
NUMBER_SLOTS(rshift, OP_RSHIFT)

/* pow(x, y, z): a 3-argument call goes to the Python function (which rejects it), as before */
static PyObject *
nb_pow(PyObject *a, PyObject *b, PyObject *z)
{
    if (z != Py_None) {
        if (!IS_ARRAY(a) || OPS[OP_POW].fn == NULL)
            Py_RETURN_NOTIMPLEMENTED;
        return PyObject_CallFunctionObjArgs(OPS[OP_POW].fn, a, b, z, NULL);
    }
    return number_op(OP_POW, a, b);
}

static PyObject *
nb_ipow(PyObject *a, PyObject *b, PyObject *z)
{
    if (z != Py_None) {
        if (OPS[OP_POW].inplace == NULL)
            Py_RETURN_NOTIMPLEMENTED;
        return PyObject_CallFunctionObjArgs(OPS[OP_POW].inplace, a, b, z, NULL);
    }
    return inplace_op(OP_POW, a, b);
}

static PyNumberMethods Base_as_number = {
    .nb_add = nb_add, .nb_subtract = nb_sub, .nb_multiply = nb_mul, .nb_remainder = nb_mod,
    .nb_power = nb_pow, .nb_lshift = nb_lshift, .nb_rshift = nb_rshift, .nb_and = nb_and,
    .nb_xor = nb_xor, .nb_or = nb_or, .nb_floor_divide = nb_floordiv,
    .nb_true_divide = nb_truediv,
    .nb_inplace_add = nb_iadd, .nb_inplace_subtract = nb_isub, .nb_inplace_multiply = nb_imul,
    .nb_inplace_remainder = nb_imod, .nb_inplace_power = nb_ipow,
    .nb_inplace_lshift = nb_ilshift, .nb_inplace_rshift = nb_irshift, .nb_inplace_and = nb_iand,
    .nb_inplace_xor = nb_ixor, .nb_inplace_or = nb_ior, .nb_inplace_floor_divide = nb_ifloordiv,
    .nb_inplace_true_divide = nb_itruediv,
};

/* The buffer protocol of host arrays (Python 3.11 has no __buffer__): NumPy's buffer, re-exported
   (the view's obj is the ndarray, which releases it). */
static int
Base_getbuffer(BaseObject *self, Py_buffer *view, int flags)
{
    if (self->device != CPU || self->data == NULL) {
        PyErr_Format(PyExc_TypeError, "ruda: the buffer protocol needs a host array; this array "
                     "is on '%S': call x.to_device('cpu') first", self->device);
        view->obj = NULL;
        return -1;
    }
    return PyObject_GetBuffer(self->data, view, flags);
}

static PyBufferProcs Base_as_buffer = {.bf_getbuffer = (getbufferproc)Base_getbuffer};

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

/* ------------------------------------------------------------------------------------------ */
/* Wrapped functions: a C callable with a fast path, else the Python function */

typedef PyObject *(*fastfunc)(PyObject *self, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames);

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fn;       /* the Python implementation */
    PyObject *extra;    /* per-kind data */
    int op;
    PyObject *dict;
} FuncObject;

static PyTypeObject FuncType;

/* ruda._hints.keyword_error(fn, kwnames, exc): the TypeError naming the standard's spelling
   of a keyword fn rejected, or None */
static PyObject *hint_hook = NULL;

/* A TypeError with no traceback came from binding the arguments (fn never ran): swap in the
   hint's error, else keep it.  The error path only. */
static void
keyword_hint(FuncObject *f, PyObject *kwnames)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (tb == NULL) {
        PyErr_NormalizeException(&type, &value, &tb);
        PyObject *hint = PyObject_CallFunctionObjArgs(hint_hook, f->fn, kwnames, value, NULL);
        if (hint != NULL && PyExceptionInstance_Check(hint)) {
            PyErr_SetObject((PyObject *)Py_TYPE(hint), hint);
            Py_DECREF(hint);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            return;
        }
        if (hint == NULL)
            PyErr_Clear();
        Py_XDECREF(hint);
    }
    PyErr_Restore(type, value, tb);
}

static PyObject *
fallback(FuncObject *f, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *r = PyObject_Vectorcall(f->fn, args, nargsf, kwnames);
    if (r == NULL && kwnames != NULL && hint_hook != NULL &&
            PyErr_ExceptionMatches(PyExc_TypeError))
        keyword_hint(f, kwnames);
    return r;
}

/* no fast path: the Python function, with keyword hints on its errors */
static PyObject *
plain_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    return fallback((FuncObject *)self, args, nargsf, kwnames);
}

static PyObject *
binary_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    FuncObject *f = (FuncObject *)self;
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL) {
        PyObject *r = fast_binary(f->op, args[0], args[1]);
        if (r != NULL || PyErr_Occurred())
            return r;
    }
    return fallback(f, args, nargsf, kwnames);
}

static int
Func_traverse(FuncObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fn);
    Py_VISIT(self->extra);
    Py_VISIT(self->dict);
    return 0;
}

static int
Func_clear(FuncObject *self)
{
    Py_CLEAR(self->fn);
    Py_CLEAR(self->extra);
    Py_CLEAR(self->dict);
    return 0;
}

static void
Func_dealloc(FuncObject *self)
{
    PyObject_GC_UnTrack(self);
    Func_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Func_repr(FuncObject *self)
{
    return PyUnicode_FromFormat("<ruda function %R (C fast path)>", self->fn);
}

static PyObject *
Func_get(PyObject *self, PyObject *obj, PyObject *type)   /* binds as a method, like a function */
{
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyTypeObject FuncType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ruda._speedups.Function",
    .tp_basicsize = sizeof(FuncObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A ruda function with a C fast path for host arrays (the Python one is __wrapped__).",
    .tp_traverse = (traverseproc)Func_traverse,
    .tp_clear = (inquiry)Func_clear,
    .tp_dealloc = (destructor)Func_dealloc,
    .tp_repr = (reprfunc)Func_repr,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(FuncObject, vectorcall),
    .tp_dictoffset = offsetof(FuncObject, dict),
    .tp_descr_get = Func_get,
};

static PyObject *
make_func(vectorcallfunc call, PyObject *fn, PyObject *extra, int op)
{
    FuncObject *f = PyObject_GC_New(FuncObject, &FuncType);
    if (f == NULL)
        return NULL;
    f->vectorcall = call;
    Py_INCREF(fn);
    f->fn = fn;
    Py_XINCREF(extra);
    f->extra = extra;
    f->op = op;
    f->dict = PyDict_New();
    if (f->dict == NULL) {
        Py_DECREF(f);
        return NULL;
    }
    PyObject_GC_Track(f);
    /* functools.update_wrapper's attributes */
    static const char *attrs[] = {"__module__", "__name__", "__qualname__", "__doc__", NULL};
    for (int i = 0; attrs[i]; i++) {
        PyObject *v = PyObject_GetAttrString(fn, attrs[i]);
        if (v == NULL) {
            PyErr_Clear();
            continue;
        }
        int rc = PyDict_SetItemString(f->dict, attrs[i], v);
        Py_DECREF(v);
        if (rc < 0)
            goto error;
    }
    if (PyDict_SetItemString(f->dict, "__wrapped__", fn) < 0)
        goto error;
    return (PyObject *)f;
error:
    Py_DECREF(f);
    return NULL;
}

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

/* ------------------------------------------------------------------------------------------ */
/* registration from Python */

static PyObject *
m_new(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "new(data, device)");
        return NULL;
    }
    if (ArrayType == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ruda._speedups: Array is not registered");
        return NULL;
    }
    BaseObject *r = alloc_array();
    if (r == NULL)
        return NULL;
    Py_INCREF(args[0]);
    r->data = args[0];
    Py_INCREF(args[1]);
    r->device = args[1];
    if (plain_layout)
        PyObject_GC_Track(r);
    return (PyObject *)r;
}

static int
set_ref(PyObject **slot, PyObject *v)
{
    Py_XINCREF(v);
    Py_XSETREF(*slot, v);
    return 0;
}

/* Does NumPy's array layout read as NPArrayFields on probe, an exact ndarray of shape
   (2, 3, 5)?  Checked against the Python attributes. */
static int
check_fields(PyObject *probe)
{
    if (!Py_IS_TYPE(probe, NDArray))
        return 0;
    NPArrayFields *f = (NPArrayFields *)probe;
    PyObject *dt = PyObject_GetAttr(probe, s_dtype);
    if (dt == NULL) {
        PyErr_Clear();
        return 0;
    }
    Py_DECREF(dt);
    return f->nd == 3 && f->dimensions != NULL && f->dimensions[0] == 2 && f->dimensions[1] == 3
        && f->dimensions[2] == 5 && f->descr == dt;
}

/* setup(Array, cpu, ndarray, numpy.asarray, float64, int64, complex128, probe) */
static PyObject *
m_setup(PyObject *mod, PyObject *args)
{
    PyObject *arr, *cpu, *nd, *asa, *f64, *i64, *c128, *probe;
    if (!PyArg_ParseTuple(args, "O!OO!OOOOO:setup", &PyType_Type, &arr, &cpu, &PyType_Type, &nd,
                          &asa, &f64, &i64, &c128, &probe))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)arr, &BaseType)) {
        PyErr_SetString(PyExc_TypeError, "setup: Array must subclass ruda._speedups.Base");
        return NULL;
    }
    set_ref((PyObject **)&ArrayType, arr);
    plain_layout = ArrayType->tp_basicsize == (Py_ssize_t)sizeof(BaseObject)
        && ArrayType->tp_itemsize == 0 && ArrayType->tp_dictoffset == 0
        && ArrayType->tp_weaklistoffset == (Py_ssize_t)offsetof(BaseObject, weakreflist)
        && (ArrayType->tp_flags & Py_TPFLAGS_HEAPTYPE)
        && ArrayType->tp_alloc == PyType_GenericAlloc;
    if (plain_layout && ArrayType->tp_finalize == NULL && ArrayType->tp_del == NULL
            && ArrayType->tp_free == PyObject_GC_Del)
        ArrayType->tp_dealloc = (destructor)Array_dealloc;
    set_ref(&CPU, cpu);
    set_ref((PyObject **)&NDArray, nd);
    set_ref(&np_asarray, asa);
    set_ref(&dt_float64, f64);
    set_ref(&dt_int64, i64);
    set_ref(&dt_complex128, c128);
    fields_ok = check_fields(probe);
    return PyBool_FromLong(fields_ok);
}

/* indexing(getitem, setitem, int_dtypes, float_dtypes, index_dtypes): ruda._indexing's
   functions, the dtypes whose arrays store a Python int / float as is, and those of index arrays */
static PyObject *
m_indexing(PyObject *mod, PyObject *args)
{
    PyObject *gi, *si, *sid, *sfd, *idt;
    if (!PyArg_ParseTuple(args, "OOO!O!O!:indexing", &gi, &si, &PyTuple_Type, &sid, &PyTuple_Type,
                          &sfd, &PyTuple_Type, &idt))
        return NULL;
    set_ref(&index_dtypes, idt);
    set_ref(&py_getitem, gi);
    set_ref(&py_setitem, si);
    set_ref(&set_int_dtypes, sid);
    set_ref(&set_float_dtypes, sfd);
    Py_RETURN_NONE;
}

/* elision(dtypes): turn on temporary elision for arrays of these (float, complex) dtypes */
static PyObject *
m_elision(PyObject *mod, PyObject *args)
{
    PyObject *dts;
    if (!PyArg_ParseTuple(args, "O!:elision", &PyTuple_Type, &dts))
        return NULL;
    if (s_out_kw == NULL && (s_out_kw = Py_BuildValue("(s)", "out")) == NULL)
        return NULL;
    set_ref(&elide_dtypes, PyTuple_GET_SIZE(dts) ? dts : NULL);
    return PyBool_FromLong(CAN_ELIDE && elide_dtypes != NULL);
}

/* devices(default, contextvar): ruda._devices' default() and its `with` blocks' variable */
static PyObject *
m_devices(PyObject *mod, PyObject *args)
{
    PyObject *fn, *var;
    if (!PyArg_ParseTuple(args, "OO:devices", &fn, &var))
        return NULL;
    if (!PyContextVar_CheckExact(var)) {
        PyErr_SetString(PyExc_TypeError, "devices: expected a ContextVar");
        return NULL;
    }
    set_ref(&py_default_device, fn);
    set_ref(&dev_block, var);
    Py_RETURN_NONE;
}

/* fixed_default(device_or_None_or_str): the default outside `with default_device` blocks */
static PyObject *
m_fixed_default(PyObject *mod, PyObject *dev)
{
    set_ref(&fixed_dev, dev == Py_None ? NULL : dev);
    Py_RETURN_NONE;
}

static int
op_index(PyObject *name)
{
    for (int i = 0; i < N_OPS; i++)
        if (PyUnicode_CompareWithASCIIString(name, OP_NAMES[i]) == 0)
            return i;
    PyErr_Format(PyExc_ValueError, "ruda._speedups: unknown elementwise op %R", name);
    return -1;
}

/* binary(name, fn, fast, fast_int, fast_float) -> the C callable for fn */
static PyObject *
m_binary(PyObject *mod, PyObject *args)
{
    PyObject *name, *fn, *fast, *fi, *ff;
    if (!PyArg_ParseTuple(args, "UOO!O!O!:binary", &name, &fn, &PyTuple_Type, &fast, &PyTuple_Type,
                          &fi, &PyTuple_Type, &ff))
        return NULL;
    int op = op_index(name);
    if (op < 0)
        return NULL;
    Op *o = &OPS[op];
    set_ref(&o->fn, fn);
    set_ref(&o->fast, fast);
    set_ref(&o->fast_int, fi);
    set_ref(&o->fast_float, ff);
    return make_func(binary_call, fn, NULL, op);
}

/* operators(name, reflected, inplace, host_ufunc_or_None) */
static PyObject *
m_operators(PyObject *mod, PyObject *args)
{
    PyObject *name, *refl, *inpl, *uf;
    if (!PyArg_ParseTuple(args, "UOOO:operators", &name, &refl, &inpl, &uf))
        return NULL;
    int op = op_index(name);
    if (op < 0)
        return NULL;
    Op *o = &OPS[op];
    set_ref(&o->reflected, refl == Py_None ? NULL : refl);
    set_ref(&o->inplace, inpl == Py_None ? NULL : inpl);
    set_ref(&o->ufunc, uf == Py_None ? NULL : uf);
    Py_RETURN_NONE;
}

/* function(kind, fn, extra) -> C callable with the fast path of that kind */
static PyObject *
m_function(PyObject *mod, PyObject *args)
{
    const char *kind;
    PyObject *fn, *extra;
    if (!PyArg_ParseTuple(args, "sOO:function", &kind, &fn, &extra))
        return NULL;
    vectorcallfunc call;
    if (strcmp(kind, "asarray") == 0)
        call = asarray_call;
    else if (strcmp(kind, "permute_dims") == 0)
        call = permute_dims_call;
    else if (strcmp(kind, "reshape") == 0)
        call = reshape_call;
    else if (strcmp(kind, "filled") == 0)
        call = filled_call;
    else if (strcmp(kind, "astype") == 0)
        call = astype_call;
    else if (strcmp(kind, "matmul") == 0)
        call = matmul_call;
    else if (strcmp(kind, "where") == 0)
        call = where_call;
    else if (strcmp(kind, "sort") == 0)
        call = sort_call;
    else if (strcmp(kind, "plain") == 0)
        call = plain_call;
    else {
        PyErr_Format(PyExc_ValueError, "ruda._speedups: unknown function kind %s", kind);
        return NULL;
    }
    return make_func(call, fn, extra, -1);
}

static PyObject *
m_hints(PyObject *mod, PyObject *hook)
{
    Py_INCREF(hook);
    Py_XSETREF(hint_hook, hook);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------ */
/* CRC-32 for ruda.data's chunk checks: zlib's CRC (polynomial 0x04C11DB7, reflected, inverted
 * in and out), so crc32(data, value) == zlib.crc32(data, value).  Bulk data is folded 64 bytes
 * at a time with carry-less multiplies (PCLMULQDQ, where the CPU has it) down to one 16-byte
 * block whose CRC the byte tables finish; elsewhere slice-by-8 tables (slower than zlib's own, so
 * ruda.data then uses zlib: CRC32_FOLDING).  The GIL is released for large buffers. */

static uint32_t crc_tab[8][256];
static int crc_clmul = 0;            /* the CPU has PCLMULQDQ and SSE4.1 */
static uint64_t crc_k[4];            /* fold constants: 64-byte, then 16-byte distances */

/* x^n mod P as 33 reflected bits (bit 32 of the reflected product lands in bit 0) */
static uint64_t
crc_xpow(int n)
{
    uint64_t r = 1;
    for (int i = 0; i < n; i++) {
        r <<= 1;
        if (r >> 32)
            r ^= 0x104C11DB7ULL;
    }
    uint64_t out = 0;
    for (int i = 0; i < 32; i++)
        if (r >> i & 1)
            out |= 1ULL << (31 - i);
    return out << 1;
}

static void
crc_init(void)
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int i = 0; i < 8; i++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_tab[0][b] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int b = 0; b < 256; b++)
            crc_tab[t][b] = crc_tab[0][crc_tab[t - 1][b] & 0xff] ^ (crc_tab[t - 1][b] >> 8);
    /* folding a 128-bit block forward by D bits: its low half times x^(D+32), its high half
     * times x^(D-32) (mod P, reflected) */
    crc_k[0] = crc_xpow(4 * 128 + 32);
    crc_k[1] = crc_xpow(4 * 128 - 32);
    crc_k[2] = crc_xpow(128 + 32);
    crc_k[3] = crc_xpow(128 - 32);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    crc_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
}

/* the raw (not inverted) register after bytes p[0..n) with the tables */
static uint32_t
crc_bytes(uint32_t c, const unsigned char *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        c = crc_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= c;         /* little-endian hosts only (ruda.data requires one) */
        c = crc_tab[7][w & 0xff] ^ crc_tab[6][w >> 8 & 0xff] ^ crc_tab[5][w >> 16 & 0xff] ^
            crc_tab[4][w >> 24 & 0xff] ^ crc_tab[3][w >> 32 & 0xff] ^
            crc_tab[2][w >> 40 & 0xff] ^ crc_tab[1][w >> 48 & 0xff] ^ crc_tab[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = crc_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CRC_CLMUL_BUILT 1

/* block folded forward over distance k (k's low qword for x's low half, high for high) */
__attribute__((target("pclmul,sse4.1"))) static inline __m128i
crc_fold(__m128i x, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

/* the raw register after p[0..n), n >= 64: the register is XORed into the first 4 bytes
 * (same residue), 4 blocks fold in parallel across each 64 bytes, then into one, whose 16
 * bytes and the tail the tables finish (any bytes of the same residue give the same CRC) */
__attribute__((target("pclmul,sse4.1"))) static uint32_t
crc_clmul_bytes(uint32_t c, const unsigned char *p, size_t n)
{
    const __m128i k4 = _mm_set_epi64x((long long)crc_k[1], (long long)crc_k[0]);
    const __m128i k1 = _mm_set_epi64x((long long)crc_k[3], (long long)crc_k[2]);
    __m128i x0 = _mm_loadu_si128((const __m128i *)p);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)c));
    p += 64;
    n -= 64;
    while (n >= 64) {
        x0 = _mm_xor_si128(crc_fold(x0, k4), _mm_loadu_si128((const __m128i *)p));
        x1 = _mm_xor_si128(crc_fold(x1, k4), _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = _mm_xor_si128(crc_fold(x2, k4), _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = _mm_xor_si128(crc_fold(x3, k4), _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        n -= 64;
    }
    x0 = _mm_xor_si128(crc_fold(x0, k1), x1);
    x0 = _mm_xor_si128(crc_fold(x0, k1), x2);
    x0 = _mm_xor_si128(crc_fold(x0, k1), x3);
    while (n >= 16) {
        x0 = _mm_xor_si128(crc_fold(x0, k1), _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
    unsigned char last[16];
    _mm_storeu_si128((__m128i *)last, x0);
    return crc_bytes(crc_bytes(0, last, 16), p, n);
}
#endif

static uint32_t
crc_update(uint32_t crc, const unsigned char *p, size_t n, int tables)
{
    uint32_t c = ~crc;
#ifdef CRC_CLMUL_BUILT
    if (crc_clmul && !tables && n >= 64)
        return ~crc_clmul_bytes(c, p, n);
#endif
    return ~crc_bytes(c, p, n);
}

/* crc32(data, value=0, tables=False): zlib.crc32 of any contiguous buffer (tables: the
 * slice-by-8 path even where PCLMULQDQ exists, for tests) */
static PyObject *
m_crc32(PyObject *mod, PyObject *args)
{
    Py_buffer view;
    unsigned int value = 0;
    int tables = 0;
    if (!PyArg_ParseTuple(args, "y*|Ip:crc32", &view, &value, &tables))
        return NULL;
    uint32_t crc;
    if (view.len >= 1 << 16) {
        Py_BEGIN_ALLOW_THREADS
        crc = crc_update(value, view.buf, (size_t)view.len, tables);
        Py_END_ALLOW_THREADS
    }
    else
        crc = crc_update(value, view.buf, (size_t)view.len, tables);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

static PyMethodDef module_methods[] = {
    {"new", (PyCFunction)(void (*)(void))m_new, METH_FASTCALL, "new(data, device): an Array"},
    {"setup", m_setup, METH_VARARGS, "register ruda's Array, cpu Device and NumPy objects"},
    {"indexing", m_indexing, METH_VARARGS, "register ruda._indexing's functions"},
    {"devices", m_devices, METH_VARARGS, "register ruda._devices' default() and block variable"},
    {"fixed_default", m_fixed_default, METH_O, "the default device outside `with` blocks"},
    {"elision", m_elision, METH_VARARGS, "temporary elision for these dtypes (() turns it off)"},
    {"binary", m_binary, METH_VARARGS, "an elementwise function with the host fast path"},
    {"operators", m_operators, METH_VARARGS, "register the Python operators of one op"},
    {"function", m_function, METH_VARARGS, "a namespace function with a host fast path"},
    {"hints", m_hints, METH_O, "register ruda._hints.keyword_error (keyword errors' hints)"},
    {"crc32", m_crc32, METH_VARARGS, "crc32(data, value=0, tables=False): zlib.crc32, faster"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT, "ruda._speedups", "ruda's optional C accelerator for host arrays.", -1,
    module_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    /* instances of Array (a subclass) are also made by object.__new__ in the pure-Python helpers */
    BaseType.tp_new = PyBaseObject_Type.tp_new;
    crc_init();
    if (PyType_Ready(&BaseType) < 0 || PyType_Ready(&FuncType) < 0)
        return NULL;
    s_dtype = PyUnicode_InternFromString("dtype");
    s_shape = PyUnicode_InternFromString("shape");
    s_transpose = PyUnicode_InternFromString("transpose");
    s_reshape = PyUnicode_InternFromString("reshape");
    s_astype = PyUnicode_InternFromString("astype");
    s_size = PyUnicode_InternFromString("size");
    s_copy = PyUnicode_InternFromString("copy");
    s_sort = PyUnicode_InternFromString("sort");
    if (!s_dtype || !s_shape || !s_transpose || !s_reshape ||
            !s_astype || !s_size || !s_copy || !s_sort)
        return NULL;
    PyObject *m = PyModule_Create(&speedups_module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&BaseType);
    if (PyModule_AddObject(m, "Base", (PyObject *)&BaseType) < 0) {
        Py_DECREF(&BaseType);
        Py_DECREF(m);
        return NULL;
    }
    /* the binary ops this build knows (ruda/_array.py checks them against ruda.backends' table) */
    PyObject *names = PyTuple_New(N_OPS);
    if (names == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    for (int i = 0; i < N_OPS; i++) {
        PyObject *n = PyUnicode_FromString(OP_NAMES[i]);
        if (n == NULL) {
            Py_DECREF(names);
            Py_DECREF(m);
            return NULL;
        }
        PyTuple_SET_ITEM(names, i, n);
    }
    if (PyModule_AddObject(m, "BINARY_OPS", names) < 0) {
        Py_DECREF(names);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&FuncType);
    if (PyModule_AddObject(m, "Function", (PyObject *)&FuncType) < 0) {
        Py_DECREF(&FuncType);
        Py_DECREF(m);
        return NULL;
    }
    /* whether crc32 folds with PCLMULQDQ here (its tables alone are slower than zlib's) */
    if (PyModule_AddObjectRef(m, "CRC32_FOLDING", crc_clmul ? Py_True : Py_False) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
