"""Pending results and the handle that non-blocking collectives return."""


class Pending:
    """An operation in flight: ``wait()`` completes it (under the watchdog) and returns
    ``finish()``; ``test()`` says whether it has completed without blocking."""

    __slots__ = ("_wait", "_test", "_finish", "_wd", "_what", "_done", "_value")

    def __init__(self, wd, what, wait=None, test=None, finish=None):
        self._wd, self._what = wd, what
        self._wait, self._test, self._finish = wait, test, finish
        self._done = False
        self._value = None

    def test(self):
        if self._done or self._test is None:
            return True
        return bool(self._test())

    def wait(self):
        if not self._done:
            if self._wait is not None:
                self._wd.arm(self._what)
                try:
                    self._wait()
                finally:
                    self._wd.disarm()
            self._value = self._finish() if self._finish is not None else None
            self._done = True
        return self._value


class done:
    """A Pending that has already completed with ``value``."""

    __slots__ = ("_value",)

    def __init__(self, value):
        self._value = value

    def test(self):
        return True

    def wait(self):
        return self._value


class Work:
    """Handle of a non-blocking collective: ``wait()`` returns its result (what the
    blocking form returns); ``is_completed()`` polls without blocking."""

    __slots__ = ("_pending", "_post")

    def __init__(self, pending, post):
        self._pending, self._post = pending, post

    def is_completed(self):
        return self._pending.test()

    def wait(self):
        return self._post(self._pending.wait())

    def __repr__(self):
        return f"<ruda.distributed.Work {'done' if self.is_completed() else 'pending'}>"
