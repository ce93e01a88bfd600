from cupy.cuda import Device  # noqa: F401

CUBLAS_HANDLE = 1234      # the one cuBLAS handle (an opaque number, as CuPy's)


def get_cublas_handle():
    return CUBLAS_HANDLE
