"""One benchmark case: its group, op, size label and dtype, the work one call does, and a
builder of each contestant's zero-argument callable."""

GROUPS = ("matmul", "elementwise", "reductions", "transfer", "latency", "host", "nn",
          "conv", "llm")  # run order
TORCH_CPU_GROUPS = ("nn", "conv", "llm")   # groups where torch on the host is the reference

# host contestants (ruda:cpu, numpy) do not run cases larger than these
_CPU_MAX_ELEMENTS = 3e7
_CPU_MAX_MATMUL = {"float32": 2048, "float64": 2048, "float16": 512, "bfloat16": 512}


class Case:
    def __init__(self, group, op, size, dtype, make, *, flops=None, nbytes=None, elements=None,
                 only=None, sync_each=False, target=None, tokens=None):
        self.group, self.op, self.size, self.dtype = group, op, size, dtype
        self.make = make
        self.flops, self.nbytes, self.elements = flops, nbytes, elements
        self.only = only                  # contestant kinds allowed (None: all)
        self.sync_each = sync_each        # latency: device sync after every call
        self.target = target              # host group: allowed ruda/numpy time ratio
        self.tokens = tokens              # llm: tokens generated per call (shown as tokens/s)

    def allows(self, c):
        if self.only is not None and c.kind not in self.only:
            return False
        if self.group == "host" and c.gpu:          # ruda on cpu vs NumPy only
            return False
        if c.name == "torch:cpu" and self.group not in TORCH_CPU_GROUPS:
            return False
        if not c.gpu and self.elements is not None and self.elements > _CPU_MAX_ELEMENTS:
            return False
        return True

    def label(self):
        return (self.group, self.op, self.size, self.dtype)
