"""broadcast_object and allgather_object: any picklable object, as bytes
through the front end's own byte collectives (cloudpickle when installed,
as Horovod does, so that lambdas and local classes travel too)."""
import io
import pickle

try:
    import cloudpickle as _pickler
except ImportError:
    _pickler = pickle


def dumps(obj):
    buffer = io.BytesIO()
    _pickler.dump(obj, buffer)
    return buffer.getvalue()


def loads(data):
    return pickle.loads(bytes(data))


def broadcast_object(obj, root_rank, rank, broadcast_bytes):
    """broadcast_bytes(payload or None, length, root) -> root's bytes; lengths first, then the payload."""
    payload = dumps(obj) if rank == root_rank else b""
    return loads(broadcast_bytes(payload, root_rank))


def allgather_object(obj, allgather_bytes):
    """allgather_bytes(payload) -> every rank's payload, in rank order."""
    return [loads(part) for part in allgather_bytes(dumps(obj))]
