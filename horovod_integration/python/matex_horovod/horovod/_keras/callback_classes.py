"""Callback classes made on a Keras's Callback: Horovod's Keras callbacks are
written once, in base-less behaviour classes, and a fit of either Keras (3 or
tf_keras) calls only callbacks of its own kind."""

_made = {}


def made_on(callback_base, behaviours, module):
    """{name: a class deriving from behaviour and callback_base}, for each
    (name, behaviour) in order, made once per base and behaviour list. A
    behaviour that derives from an earlier one's derives from that one's made
    class too, so isinstance holds as it would for hand-written subclasses."""
    key = (callback_base, tuple(behaviours))
    if key not in _made:
        made, made_for = {}, {}
        for name, behaviour in behaviours:
            parent = next((made_for[b] for b in behaviour.__mro__[1:] if b in made_for), callback_base)
            made[name] = made_for[behaviour] = type(name, (behaviour, parent),
                                                    {"__module__": module, "__doc__": behaviour.__doc__})
        _made[key] = made
    return _made[key]
