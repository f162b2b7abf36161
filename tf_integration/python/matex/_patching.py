"""Replacing a framework's function by a wrapper, once: patch(owner, name,
make) sets owner.name = make(original). A missing target fails loudly with
the installed versions, so matex never trains undistributed by accident."""


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
