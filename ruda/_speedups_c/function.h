/* ruda._speedups: wrapped functions: Function objects (included by ruda/_speedups.c: one translation unit). */

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
