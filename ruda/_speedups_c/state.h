/* ruda._speedups: state registered from Python, and the binary ops' table (included by ruda/_speedups.c: one translation unit). */

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
