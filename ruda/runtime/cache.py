"""Two-level kernel cache (as CuPy's): IR kernel -> rendered program, then
(device, source) -> compiled pipeline.

Distinct IR kernels that render to the same source share one pipeline; a
program is rendered once per renderer whatever the device.
"""


class ProgramCache:
    """kernel -> program for one renderer; source -> compiled object for one device."""

    def __init__(self, renderer, compile_fn):
        self.renderer = renderer
        self.compile_fn = compile_fn
        self.programs = {}
        self.by_id = {}
        self.compiled = {}
        self.hits = self.misses = 0

    def get(self, kernel):
        """(program, compiled) for ``kernel``, rendering and compiling on first use."""
        hit = self.by_id.get(id(kernel))
        if hit is not None and hit[0] is kernel:     # identity first: no deep hash of the IR tree
            self.hits += 1
            return hit[1]
        hit = self.programs.get(kernel)
        if hit is not None:
            self.hits += 1
            self.by_id[id(kernel)] = (kernel, hit)
            return hit
        self.misses += 1
        prog = self.renderer.render(kernel)
        comp = self.compiled.get(prog.source)
        if comp is None:
            comp = self.compiled[prog.source] = self.compile_fn(prog)
        hit = self.programs[kernel] = (prog, comp)
        self.by_id[id(kernel)] = (kernel, hit)
        return hit

    def __len__(self):
        return len(self.compiled)
