"""backward_passes_per_step for tf_keras optimizers: gradients summed on each
rank over N backward passes, reduced across ranks once every N passes.

Each pass adds its gradients into one accumulator per variable (tf.Variables
made outside any traced function, under tf.init_scope) and counts the pass.
On the N-th pass the sums are reduced across ranks (local variables stay
local), divided by N if average_aggregated_gradients, handed back, and the
accumulators and the count start again from zero; on the other passes the
running sums are handed back. apply_gradients applies only when the count is
back at zero and otherwise advances the optimizer's iterations by one, so
iterations counts passes, as in Horovod.

Cost: one allreduce of the model's gradients per N passes; one extra copy
of the gradients in memory. Sparse gradients (tf.IndexedSlices) are summed
densely (Horovod refuses them unless sparse_as_dense); the result is the
same as with sparse_as_dense=True. Preconditions: every rank makes the same
number of passes, so that the N-th pass comes at once everywhere.
"""
import tensorflow as tf

from ..tensorflow.gradients import variable_key


class LocalGradientAggregation:
    def __init__(self, passes, reduce, average_aggregated_gradients):
        self.passes = int(passes)
        self.reduce = reduce  # reduce(grads, variables) -> grads reduced across ranks
        self.average = bool(average_aggregated_gradients)
        with tf.init_scope():
            self.counter = tf.Variable(0, trainable=False, dtype=tf.int32, name="horovod_aggregation_counter")
        self._sums = {}

    def _sum_of(self, variable, grad):
        key = variable_key(variable)
        if key not in self._sums:
            with tf.init_scope():
                self._sums[key] = tf.Variable(tf.zeros(variable.shape, grad.dtype), trainable=False,
                                              name="horovod_aggregated_gradient")
        return self._sums[key]

    def compute(self, grads, variables):
        """This pass's gradients added to the running sums; the sums reduced
        across ranks on the N-th pass."""
        present = [i for i, g in enumerate(grads) if g is not None]
        sums = []
        for i in present:
            g = grads[i]
            if isinstance(g, tf.IndexedSlices):
                g = tf.convert_to_tensor(g)
            total = self._sum_of(variables[i], g)
            total.assign_add(g)
            sums.append(total)
        self.counter.assign_add(1)
        kept = [variables[i] for i in present]

        def reduce_and_restart():
            reduced = self.reduce([s.read_value() for s in sums], kept)
            if self.average:
                reduced = [r / tf.cast(self.passes, r.dtype) for r in reduced]
            reduced = [tf.identity(r) for r in reduced]
            with tf.control_dependencies(reduced):
                for s in sums:
                    s.assign(tf.zeros_like(s))
                self.counter.assign(0)
            return reduced

        def running_sums():
            return [s.read_value() for s in sums]

        if not present:
            return list(grads)
        results = tf.cond(tf.equal(self.counter, self.passes), reduce_and_restart, running_sums)
        out = [None] * len(grads)
        for i, value in zip(present, results):
            out[i] = value
        return out

    def apply(self, apply_now, optimizer):
        """apply_now() when the N-th pass has just been reduced; otherwise the
        optimizer's iterations advance by one."""
        with tf.init_scope():
            iterations = optimizer.iterations  # made here, not inside a branch

        def applied():
            apply_now()
            return tf.constant(True)

        def skipped():
            iterations.assign_add(1)
            return tf.constant(False)

        tf.cond(tf.equal(self.counter, 0), applied, skipped)
        return iterations
