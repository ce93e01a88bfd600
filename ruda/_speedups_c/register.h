/* ruda._speedups: registration from Python, and the layout probe (included by ruda/_speedups.c: one translation unit). */

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
