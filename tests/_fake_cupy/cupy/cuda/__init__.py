class runtime:
    @staticmethod
    def getDeviceCount():
        return 1

    @staticmethod
    def getDevice():
        return 0

    @staticmethod
    def runtimeGetVersion():
        return 13020

    @staticmethod
    def getDeviceProperties(index):
        return {"name": "NumPy posing as CuPy", "major": 9, "minor": 0, "totalGlobalMem": 2 ** 37}


class _Stream:
    ptr = 0

    def synchronize(self):
        pass


def get_current_stream():
    return _Stream()


class Device:
    attributes = {"MultiProcessorCount": 132}
    compute_capability = "90"

    def __init__(self, index=0):
        self.id = index

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def synchronize(self):
        pass


from . import compiler, device, function  # noqa: E402,F401
