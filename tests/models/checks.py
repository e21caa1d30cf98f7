"""The pass / fail counter the model tests share.

    from checks import Checks
    check = Checks("test_x")          # verbose=True prints every check, not only failures
    check(ok, "what was checked", "detail printed on failure")
    return check.finish()             # prints 'test_x: N passed, M failed'; 1 on any failure
"""


class Checks:
    def __init__(self, name="", verbose=False):
        self.name, self.verbose = name, verbose
        self.passed = self.failed = 0

    def __call__(self, ok, what, detail=""):
        ok = bool(ok)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        if self.verbose or not ok:
            line = f"{'PASS' if ok else 'FAIL'} {what}" + (f": {detail}" if detail and not ok else "")
            print(line[:600], flush=True)
        return ok

    def finish(self):
        head = f"{self.name}: " if self.name else ""
        print(f"{head}{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0
