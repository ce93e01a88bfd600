/* ruda._speedups: temporary elision of + - * /, and the buffer protocol (included by ruda/_speedups.c: one translation unit). */

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
