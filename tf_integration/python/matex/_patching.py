"""Replacing a framework's function by a wrapper, once: patch(owner, name,
make) sets owner.name = make(original). A missing target fails loudly with
the installed versions, so matex never trains undistributed by accident."""
import sys


def target(owner, name):
    if not hasattr(owner, name):
        import keras
        where = getattr(owner, "__qualname__", getattr(owner, "__name__", repr(owner)))
        raise RuntimeError(f"matex: cannot patch {where}.{name}: Keras {keras.__version__} "
                           "does not have it. matex refuses to train undistributed; unset MATEX_ENABLE or use a "
                           "supported Keras 3 release")
    return getattr(owner, name)


def patch(owner, name, make):
    original = target(owner, name)
    if getattr(original, "_matex_patched", False):
        return
    patched = make(original)
    patched._matex_patched = True
    patched.__wrapped__ = original  # inspect.signature(patched) is the original's
    setattr(owner, name, patched)


def patch_methods(patch, owner, makers):
    """patch(owner, name, make) for each name and make of `makers`, in order."""
    for name, make in makers.items():
        patch(owner, name, make)


_wrapped_methods = set()  # (class, method name, who) already wrapped by wrap_methods_at_init


def wrap_methods_at_init(base, makers, who):
    """A make() for base.__init__: at every instance's creation, each method
    named in `makers` that a class of the instance's between it and `base`
    defines itself is wrapped with makers[name], once per class, method and
    `who` (so two patchers wrap a class once each, whatever their order)."""
    def wrap_class(cls):
        for klass in cls.__mro__:
            if not (isinstance(klass, type) and issubclass(klass, base)):
                continue
            for name, make in makers.items():
                key = (klass, name, who)
                if name in klass.__dict__ and key not in _wrapped_methods:
                    _wrapped_methods.add(key)
                    setattr(klass, name, make(klass.__dict__[name]))

    def make(original):
        def __init__(self, *args, **kwargs):
            wrap_class(type(self))
            return original(self, *args, **kwargs)
        return __init__
    return make


def arguments_as_keywords(function, owner, args, kwargs):
    """owner.function(*args, **kwargs)'s arguments, positional ones too, as
    one dict of keywords (without self), bound by function's own signature."""
    import inspect
    arguments = dict(inspect.signature(function).bind(owner, *args, **kwargs).arguments)
    arguments.pop("self", None)
    arguments.update(arguments.pop("kwargs", {}))
    return arguments


def rebind(replacements, roots=("keras", "tensorflow", "tf_keras")):
    """Every name the frameworks bound at import to a replaced function
    (keras.saving.save_model, tf.saved_model.save, tf.nn.compute_average_loss,
    ...) names its replacement: {id(original): replacement}, as
    patch_everywhere collects them."""
    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] not in roots:
            continue
        for attribute, value in list(getattr(module, "__dict__", {}).items()):
            replacement = replacements.get(id(value))
            if replacement is not None and value is replacement.__wrapped__:
                setattr(module, attribute, replacement)


def patch_everywhere(patch, owner, name, make, replacements):
    """patch(owner, name, make), the replacement noted for rebind()."""
    patch(owner, name, make)
    replacement = getattr(owner, name)
    replacements[id(replacement.__wrapped__)] = replacement
