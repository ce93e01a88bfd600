class runtime:
    device_count = 1        # what getDeviceCount reports; an exception instance is raised

    @classmethod
    def getDeviceCount(cls):
        if isinstance(cls.device_count, Exception):
            raise cls.device_count
        return cls.device_count

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

    def is_capturing(self):         # no CUDA graphs here
        return False


_stream = _Stream()
log = []                # what events did, in order: ("record", stream), ("sync",); tests add theirs
MS_PER_STEP = 2.5       # event time: each entry of ``log`` takes this long


def get_current_stream():
    return _stream


class Event:
    def record(self, stream=None):
        log.append(("record", stream))
        self.step = len(log)

    def synchronize(self):
        log.append(("sync",))


def get_elapsed_time(start, end):
    """Milliseconds between two recorded events: MS_PER_STEP per entry of ``log`` between them."""
    return MS_PER_STEP * (end.step - start.step)


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
