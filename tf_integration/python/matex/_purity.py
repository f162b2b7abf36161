"""Whether a tf.data map function is pure: its output depends only on its
element, so running it on some rows and not others changes no row.

The map's traced graph is read (its nodes and those of the functions it calls).
TensorFlow marks every op with state stateful; of those only reads are pure:
assertions, prints, variable reads and lookups in a table. py_function and
numpy_function are Python, so their code is scanned (nested functions and
the functions of their module they call, two levels deep) for the names of
random generators: a hit is reported as impure. A false hit costs only the
sharding (the pipeline stays replicated, exact). The contract the docs state:
a map must return the same output for the same input, or
MATEX_INPUT_SHARDING=replicate.
"""
import inspect
import types

_PURE_STATEFUL = {"Assert", "PrintV2", "Print", "ReadVariableOp", "LookupTableFindV2", "LookupTableSizeV2",
                  "LookupTableFind", "LookupTableSize"}
_CALLS = {"StatefulPartitionedCall", "PartitionedCall", "If", "While", "Case"}  # their bodies are read instead
_PYTHON = {"EagerPyFunc", "PyFunc", "PyFuncStateless"}
_RNG_NAMES = {"random", "rand", "randn", "randint", "random_sample", "default_rng", "Generator", "RandomState",
              "shuffle", "permutation", "choice", "uniform", "normal", "seed", "urandom", "sample", "gauss"}
_SCAN_DEPTH = 2


def _op_kinds(function):
    """(op type, node) of every node in the function's graph and the functions it calls."""
    graph_def = function.graph.as_graph_def()
    nodes = list(graph_def.node)
    for library_function in graph_def.library.function:
        nodes.extend(library_function.node_def)
    return [(node.op, node) for node in nodes]


def _python_function(node):
    from tensorflow.python.ops import script_ops
    token = node.attr["token"].s.decode()
    func = script_ops._py_funcs.get(token)
    return getattr(func, "_func", func)


def _unwrapped(func):
    func = inspect.unwrap(getattr(func, "__func__", func))  # bound methods, AutoGraph's and functools' wrappers
    return getattr(func, "__func__", func)


def _code_of(func):
    func = _unwrapped(func)
    code = getattr(func, "__code__", None)
    if code is None and callable(func):
        call = getattr(type(func), "__call__", None)
        code = getattr(call, "__code__", None)
    return code


def _rng_name_in(func, depth=_SCAN_DEPTH, seen=None):
    """The first random generator's name the function's code refers to, or None."""
    seen = set() if seen is None else seen
    func = _unwrapped(func)
    code = _code_of(func)
    if code is None or code in seen:
        return None
    seen.add(code)
    codes = [code]
    while codes:
        current = codes.pop()
        for name in current.co_names:
            if name in _RNG_NAMES or name.startswith("rand"):
                return name
        codes.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    if depth > 0:
        module_globals = getattr(func, "__globals__", {})
        for name in code.co_names:
            callee = module_globals.get(name)
            if isinstance(callee, types.FunctionType) and callee.__module__ == getattr(func, "__module__", None):
                hit = _rng_name_in(callee, depth - 1, seen)
                if hit:
                    return hit
    return None


def why_impure(wrapper):
    """None for a pure map function (a tf.data StructuredFunctionWrapper), else
    what makes it impure, naming the op."""
    from tensorflow.python.framework import op_def_registry
    try:
        kinds = _op_kinds(wrapper.function)
    except Exception as error:  # noqa: BLE001 - an unreadable function is not known to be pure
        return f"could not be read ({type(error).__name__})"
    for kind, node in kinds:
        if kind in _PYTHON:
            func = _python_function(node)
            if func is None:
                return f"calls Python ({kind}) matex cannot inspect"
            name = _rng_name_in(func)
            if name:
                return (f"calls Python ({getattr(func, '__qualname__', kind)}) that draws random numbers "
                        f"('{name}')")
            continue
        if kind in _PURE_STATEFUL or kind in _CALLS:
            continue
        op_def = op_def_registry.get(kind)
        if op_def is None or not op_def.is_stateful:
            continue
        if "Random" in kind or kind.startswith(("Stateful", "Rng", "Multinomial", "TruncatedNormal")):
            return f"uses {kind}, a stateful random op"
        if "Assign" in kind or "Scatter" in kind or "Insert" in kind or "Remove" in kind:
            return f"writes state ({kind})"
        return f"uses {kind}, a stateful op"
    return None
