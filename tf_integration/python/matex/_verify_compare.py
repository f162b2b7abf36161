"""How `python -m matex.verify` compares two recorded runs (_verify_log.py):
the reference (the plain script on one process, or a 1-rank activated run)
and a distributed one, optionally against a noise reference (the plain run
again with other rounding).

Every figure is compared relative to its own size. A variable whose norm in
the reference stays at rounding level (below _ROUNDING_LEVEL of the step's
largest at every step: a convolution's bias in front of BatchNormalization
has no gradient) is compared against _NOISE_FLOOR of the step's largest norm
instead; it is listed. With a noise reference, a difference counts as
rounding when it is no larger than the largest difference that rounding
alone made between the two plain runs in the same kind of figure, up to the
same point of the run (the noise grows as training goes on).
"""
_ROUNDING_LEVEL = 1e-6
_NOISE_FLOOR = 1e-3


def relative(a, b, floor=0.0):
    if a is None or b is None:
        return 0.0 if a is b else float("inf")
    scale = max(abs(a), abs(b), floor)
    return 0.0 if scale == 0 else abs(a - b) / scale


def rounding_level_variables(steps):
    """Indices of the variables whose norm stays at rounding level in the
    reference (`steps`: each step's list of norms)."""
    if not steps:
        return set()
    count = min(len(norms) for norms in steps)
    return {i for i in range(count) if all(abs(norms[i]) < _ROUNDING_LEVEL * max(map(abs, norms)) for norms in steps)}


def norms_difference(a, b, noise):
    floor = _NOISE_FLOOR * max((abs(v) for v in a + b), default=0.0)
    if len(a) != len(b):
        return float("inf")
    return max((relative(x, y, floor if i in noise else 0.0) for i, (x, y) in enumerate(zip(a, b))), default=0.0)


def series(records):
    """The records as ordered series per kind: "step" -> [norm lists], and
    for every other kind a list of (label, value)."""
    out = {"step": [], "logs": [], "evaluate": [], "metric": [], "fetch": []}
    evaluations = 0
    for r in records:
        kind = r["kind"]
        if kind == "step":
            out["step"].append(r["norms"])
        elif kind == "logs":
            out["logs"].extend((f"epoch {r['epoch']} batch {r['batch']} {k}", v) for k, v in r["values"].items())
        elif kind == "evaluate":
            evaluations += 1
            out["evaluate"].extend((f"evaluate {evaluations} #{j}", v) for j, v in enumerate(r["values"]))
        elif kind == "metric":
            out["metric"].append((f"{r['name']}.result()", r["value"]))
        elif kind == "fetch":
            out["fetch"].append((f"Session.run fetch #{r['index']} {r['name']}", r["value"]))
    return out


def _envelope(differences):
    """Running maximum: the noise allowed at each point of a series."""
    out, worst = [], 0.0
    for d in differences:
        worst = max(worst, d)
        out.append(worst)
    return out


class Comparison:
    def __init__(self, reference, run, ranks, rtol, noise_run=None):
        self.problems = []
        self.worst = 0.0        # largest relative difference of any figure
        self.worst_excess = 0.0  # the same, above rtol and above the noise envelope
        self.ranks, self.rtol = ranks, rtol
        self.a, self.b = series(reference), series(run)
        self.n = series(noise_run) if noise_run is not None else None
        self.noise_variables = rounding_level_variables(self.a["step"])

    def _judge(self, what, difference, allowed_noise):
        self.worst = max(self.worst, difference)
        if difference > max(self.rtol, allowed_noise):
            self.worst_excess = max(self.worst_excess, difference)
            self.problems.append(f"{what}: relative difference {difference:.3e} exceeds --rtol {self.rtol:g}"
                                 + (f" and the rounding noise {allowed_noise:.3e}" if self.n is not None else ""))

    def steps(self):
        a, b = self.a["step"], self.b["step"]
        if not a:
            self.problems.append("the reference logged no optimizer step (does the script train with a TensorFlow "
                                 "or Keras optimizer?)")
        if len(a) != len(b):
            self.problems.append(f"{len(a)} optimizer steps in the reference, {len(b)} on {self.ranks} ranks")
        noise = [0.0] * len(a)
        if self.n is not None:
            noise = _envelope([norms_difference(x, y, self.noise_variables) for x, y in zip(a, self.n["step"])])
            noise += [noise[-1] if noise else 0.0] * (len(a) - len(noise))
        losses_a = [v for label, v in self.a["logs"] if label.endswith(" loss")]
        losses_b = [v for label, v in self.b["logs"] if label.endswith(" loss")]
        print(f"{'step':>6} {'loss (reference)':>17} {f'loss ({self.ranks} ranks)':>16} {'max rel. diff':>14}"
              + (f" {'noise':>10}" if self.n is not None else ""))
        fmt = lambda v: f"{v:16.8g}" if v is not None else f"{'-':>16}"  # noqa: E731
        for index, (x, y) in enumerate(zip(a, b)):
            difference = norms_difference(x, y, self.noise_variables)
            self._judge(f"step {index + 1}, variable norms", difference, noise[index])
            la = losses_a[index] if index < len(losses_a) else None
            lb = losses_b[index] if index < len(losses_b) else None
            print(f"{index + 1:>6} {fmt(la):>17} {fmt(lb)} {difference:14.3e}"
                  + (f" {noise[index]:10.3e}" if self.n is not None else ""))

    def scalars(self, kind):
        a, b = self.a[kind], self.b[kind]
        if len(a) != len(b):
            self.problems.append(f"{len(a)} {kind} figures in the reference, {len(b)} on {self.ranks} ranks")
        if not a:
            return
        noise = [0.0] * len(a)
        if self.n is not None:
            noise = _envelope([relative(x[1], y[1]) for x, y in zip(a, self.n[kind])])
            noise += [noise[-1] if noise else 0.0] * (len(a) - len(noise))
        worst, where = -1.0, None
        for index, ((label, x), (other, y)) in enumerate(zip(a, b)):
            if label != other:
                self.problems.append(f"{kind} #{index + 1}: '{label}' in the reference, '{other}' on {self.ranks} ranks")
                continue
            difference = relative(x, y)
            self._judge(f"{label}", difference, noise[index])
            if difference > worst:
                worst, where = difference, (label, x, y, noise[index])
        label, x, y, n = where
        print(f"# {kind}: {len(a)} figures, largest relative difference {worst:.3e} at {label} ({x:.8g} vs {y:.8g})"
              + (f", rounding noise there {n:.3e}" if self.n is not None else ""))

    def run(self):
        self.steps()
        for kind in ("logs", "evaluate", "metric", "fetch"):
            self.scalars(kind)
        print(f"# largest relative difference: {self.worst:.3e} (rtol {self.rtol:g}) over {len(self.a['step'])} steps")
        if self.noise_variables:
            print(f"# variable(s) {sorted(self.noise_variables)} of {len(self.a['step'][0])} stayed at rounding level "
                  f"in the reference (norm below {_ROUNDING_LEVEL:g} of the largest at every step): compared against "
                  f"{_NOISE_FLOOR:g} of the step's largest norm")
        if self.n is not None:
            beyond = self.worst > self.rtol
            print(f"# beyond rtol but within the rounding noise: {'yes' if beyond and not self.worst_excess else 'no'}")
        return self.problems


def noise_summary(reference, noise_run):
    """One line: how far rounding alone moved the plain run."""
    a, n = series(reference), series(noise_run)
    variables = rounding_level_variables(a["step"])
    steps = max((norms_difference(x, y, variables) for x, y in zip(a["step"], n["step"])), default=0.0)
    others = max((relative(x[1], y[1]) for kind in ("logs", "evaluate", "metric", "fetch")
                  for x, y in zip(a[kind], n[kind])), default=0.0)
    return f"# rounding noise (plain run vs plain run with TF_ENABLE_ONEDNN_OPTS=0): {max(steps, others):.3e}"
