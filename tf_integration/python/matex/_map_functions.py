"""What the input planner's pipelines share (_input_plan.py,
_statistical_plan.py, _input_sharding.py): a tf.data map's traced function
applied again (the same graph, so no new op seeds and no trace-time side
effect runs twice, and the same structures in and out), a window as a
dataset of rows, and a rank's contiguous share of a batch."""
import tensorflow as tf


def reapplied(wrapper):
    """(call on one structured element, call on the positional arguments tf.data
    hands a map function) for the map whose StructuredFunctionWrapper is `wrapper`."""
    from tensorflow.python.data.util import structure
    function, inputs, outputs = wrapper.function, wrapper._input_structure, wrapper.output_structure

    def on_element(element):
        flat = function(*structure.to_tensor_list(inputs, element))
        return structure.from_tensor_list(outputs, flat if isinstance(flat, (list, tuple)) else [flat])

    def on_arguments(*element):
        return on_element(element if type(inputs) is tuple else element[0])  # tf.data unpacks plain tuples only
    return on_element, on_arguments


def rows_of_window(*window):
    """A window of a tf.data pipeline as one dataset of its rows (window() gives
    a dataset per component of a tuple or dict element)."""
    window = window[0] if len(window) == 1 else window
    return window if isinstance(window, tf.data.Dataset) else tf.data.Dataset.zip(window)


def share(rows, rank, size):
    """[lo, hi): rank's contiguous share of `rows` rows split over `size` ranks."""
    return rows * rank // size, rows * (rank + 1) // size


def rows_of_rank(t, rank, size):
    """rank's contiguous share of the rows of tensor `t` (its first dimension)."""
    lo, hi = share(tf.shape(t, out_type=tf.int64)[0], rank, size)
    return t[lo:hi]


def element_of(arguments, like):
    """The element tf.data passed as positional arguments, as the structure `like` has it."""
    return arguments if type(like) is tuple else arguments[0]  # a namedtuple arrives whole, as tf.data passes it


def empty_batch(spec):
    """A batch of no rows with `spec`'s row shape, or None when that shape is not static."""
    def empty(s):
        if not isinstance(s, tf.TensorSpec) or not s.shape[1:].is_fully_defined():
            raise ValueError
        return tf.zeros([0] + s.shape[1:].as_list(), s.dtype)
    try:
        return tf.nest.map_structure(empty, spec)
    except (ValueError, TypeError):
        return None
