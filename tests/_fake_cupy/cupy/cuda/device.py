from cupy.cuda import Device  # noqa: F401


def get_cublas_handle():
    return 0
