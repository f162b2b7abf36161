"""How `python -m matex.verify` compares two recorded runs (_verify_log.py):
the reference (the plain script on one process, or a 1-rank activated run)
and a distributed one, optionally against a noise reference (the plain run
again with other rounding).

Every figure is compared relative to its own size. A variable whose norm in
the reference stays at rounding level (below _ROUNDING_LEVEL of the step's
largest at every step: a convolution's bias in front of BatchNormalization
has no gradient) is compared against _NOISE_FLOOR of the step's largest norm
instead; it is listed. A NaN or an infinity that the reference does not have
at the same place is a difference of infinity.

With a noise reference, a difference counts as rounding when it is no larger
than the largest difference that rounding alone made between the two plain
runs in the same series (the same variable, or the same log key, evaluate
result, metric or fetch), up to the same point of the run: rounding noise
grows as training goes on, and it differs from one figure to the next. The
noise run must have made the same figures as the reference; if it did not
(a nondeterministic script), it is no reference and the comparison fails.
"""
import math

_ROUNDING_LEVEL = 1e-6
_NOISE_FLOOR = 1e-3
_LARGE_NOISE = 1e-2  # above this, the two plain runs hardly agree: said, as a warning


def relative(a, b, floor=0.0):
    if a is None or b is None:
        return 0.0 if a is b else math.inf
    if not (math.isfinite(a) and math.isfinite(b)):
        same = (math.isnan(a) and math.isnan(b)) or a == b
        return 0.0 if same else math.inf
    scale = max(abs(a), abs(b), floor)
    return 0.0 if scale == 0 else abs(a - b) / scale


def rounding_level_variables(steps):
    """Indices of the variables whose norm stays at rounding level in the
    reference (`steps`: each step's list of norms)."""
    if not steps:
        return set()
    count = min(len(norms) for norms in steps)
    return {i for i in range(count)
            if all(abs(norms[i]) < _ROUNDING_LEVEL * max(map(abs, norms)) for norms in steps)}


def variable_differences(a, b, noise):
    """Each variable's relative difference between two steps' norms (the
    rounding-level variables `noise` measured against the floor)."""
    finite = [abs(v) for v in a + b if math.isfinite(v)]
    floor = _NOISE_FLOOR * max(finite, default=0.0)
    return [relative(x, y, floor if i in noise else 0.0) for i, (x, y) in enumerate(zip(a, b))]


def series(records):
    """The records as ordered lists per kind: "step" -> [norm lists]; every
    other kind -> [(label, series name, value)], the series name saying which
    figures belong to one curve (a log key, an evaluate result's position, a
    metric's name, a fetch)."""
    out = {"step": [], "logs": [], "evaluate": [], "metric": [], "fetch": []}
    evaluations = 0
    for r in records:
        kind = r["kind"]
        if kind == "step":
            out["step"].append(r["norms"])
        elif kind == "logs":
            out["logs"].extend((f"epoch {r['epoch']} batch {r['batch']} {k}", k, v) for k, v in r["values"].items())
        elif kind == "evaluate":
            evaluations += 1
            out["evaluate"].extend((f"evaluate {evaluations} #{j}", j, v) for j, v in enumerate(r["values"]))
        elif kind == "metric":
            out["metric"].append((f"{r['name']}.result()", r["name"], r["value"]))
        elif kind == "fetch":
            name = f"Session.run fetch #{r['index']} {r['name']}"
            out["fetch"].append((name, name, r["value"]))
    return out


class _Envelope:
    """Running maxima of the noise, one per series."""

    def __init__(self):
        self._worst = {}

    def add(self, key, difference):
        self._worst[key] = max(self._worst.get(key, 0.0), difference)
        return self._worst[key]


class Comparison:
    def __init__(self, reference, run, ranks, rtol, noise_run=None):
        self.problems = []
        self.worst = 0.0            # largest relative difference of any figure
        self.beyond_rtol = False    # some figure passed only as rounding noise
        self.ranks, self.rtol = ranks, rtol
        self.a, self.b = series(reference), series(run)
        self.n = series(noise_run) if noise_run is not None else None
        self.noise_variables = rounding_level_variables(self.a["step"])
        if self.n is not None:
            self._check_noise_run()

    def _check_noise_run(self):
        """The noise run must have made the same figures as the reference."""
        for kind in self.a:
            ours, theirs = self.a[kind], self.n[kind]
            same = len(ours) == len(theirs) and (
                all(len(x) == len(y) for x, y in zip(ours, theirs)) if kind == "step"
                else all(x[0] == y[0] for x, y in zip(ours, theirs)))
            if not same:
                self.problems.append(f"the noise run (the plain run with TF_ENABLE_ONEDNN_OPTS=0) made other {kind} "
                                     "figures than the plain run: it is no rounding reference (is the script "
                                     "nondeterministic?)")
                self.n = None
                return

    def _judge(self, what, difference, noise):
        self.worst = max(self.worst, difference)
        if difference <= self.rtol:
            return
        if difference <= noise and math.isfinite(noise):
            self.beyond_rtol = True
            return
        self.problems.append(f"{what}: relative difference {difference:.3e} exceeds --rtol {self.rtol:g}"
                             + (f" and the rounding noise {noise:.3e}" if self.n is not None else ""))

    def steps(self):
        a, b = self.a["step"], self.b["step"]
        if not a:
            self.problems.append("the reference logged no optimizer step (does the script train with a TensorFlow "
                                 "or Keras optimizer?)")
        if len(a) != len(b):
            self.problems.append(f"{len(a)} optimizer steps in the reference, {len(b)} on {self.ranks} ranks")
        envelope = _Envelope()
        losses_a = [v for _, key, v in self.a["logs"] if key == "loss"]
        losses_b = [v for _, key, v in self.b["logs"] if key == "loss"]
        print(f"{'step':>6} {'loss (reference)':>17} {f'loss ({self.ranks} ranks)':>16} {'max rel. diff':>14}"
              + (f" {'noise':>10}" if self.n is not None else ""))
        fmt = lambda v: f"{v:16.8g}" if v is not None else f"{'-':>16}"  # noqa: E731
        for index, (x, y) in enumerate(zip(a, b)):
            if len(x) != len(y):
                self.problems.append(f"step {index + 1}: {len(x)} variables in the reference, {len(y)} on "
                                     f"{self.ranks} ranks")
                continue
            differences = variable_differences(x, y, self.noise_variables)
            noise = [0.0] * len(x)
            if self.n is not None:
                noise = [envelope.add(v, d) for v, d in
                         enumerate(variable_differences(x, self.n["step"][index], self.noise_variables))]
            for v, (d, allowed) in enumerate(zip(differences, noise)):
                self._judge(f"step {index + 1}, variable #{v}", d, allowed)
            la = losses_a[index] if index < len(losses_a) else None
            lb = losses_b[index] if index < len(losses_b) else None
            print(f"{index + 1:>6} {fmt(la):>17} {fmt(lb)} {max(differences, default=0.0):14.3e}"
                  + (f" {max(noise, default=0.0):10.3e}" if self.n is not None else ""))

    def scalars(self, kind):
        a, b = self.a[kind], self.b[kind]
        if len(a) != len(b):
            self.problems.append(f"{len(a)} {kind} figures in the reference, {len(b)} on {self.ranks} ranks")
        envelope = _Envelope()
        worst, where = -1.0, None
        for index, ((label, key, x), (other, _, y)) in enumerate(zip(a, b)):
            noise = envelope.add(key, relative(x, self.n[kind][index][2])) if self.n is not None else 0.0
            if label != other:
                self.problems.append(f"{kind} #{index + 1}: '{label}' in the reference, '{other}' on {self.ranks} ranks")
                continue
            difference = relative(x, y)
            self._judge(label, difference, noise)
            if difference > worst:
                worst, where = difference, (label, x, y, noise)
        if where is None:
            return
        label, x, y, noise = where
        print(f"# {kind}: {len(a)} figures, largest relative difference {worst:.3e} at {label} ({x} vs {y})"
              + (f", rounding noise there {noise:.3e}" if self.n is not None else ""))

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
            print(f"# beyond rtol but within the rounding noise: {'yes' if self.beyond_rtol else 'no'}")
        return self.problems


def noise_summary(reference, noise_run):
    """One line: how far rounding alone moved the plain run (and a warning
    when that is so far that agreeing within it means little)."""
    a, n = series(reference), series(noise_run)
    variables = rounding_level_variables(a["step"])
    steps = max((d for x, y in zip(a["step"], n["step"]) for d in variable_differences(x, y, variables)),
                default=0.0)
    others = max((relative(x[2], y[2]) for kind in ("logs", "evaluate", "metric", "fetch")
                  for x, y in zip(a[kind], n[kind])), default=0.0)
    noise = max(steps, others)
    line = f"# rounding noise (plain run vs plain run with TF_ENABLE_ONEDNN_OPTS=0): {noise:.3e}"
    if noise > _LARGE_NOISE:
        line += (f"\n# WARNING: rounding alone moves the plain run by more than {_LARGE_NOISE:g}; agreeing within "
                 "that noise says little (float64, or fewer steps, make a sharper reference)")
    return line
