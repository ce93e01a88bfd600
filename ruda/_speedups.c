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
 * the object protocol.  The parts live in ruda/_speedups_c/, included below in order as one
 * translation unit (their definitions stay static); this file holds the module's table and init.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "_speedups_c/state.h"
#include "_speedups_c/base.h"
#include "_speedups_c/elision.h"
#include "_speedups_c/indexing.h"
#include "_speedups_c/function.h"
#include "_speedups_c/module.h"
#include "_speedups_c/register.h"
#include "_speedups_c/crc32.h"

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
