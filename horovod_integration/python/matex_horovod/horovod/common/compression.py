"""Horovod's gradient compression, for either framework: Compression.none,
or Compression.fp16, where floating tensors travel as float16 and come back
in their own dtype. A front end makes its Compression with
compression_for(is_floating, cast, half)."""


class Compressor:
    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class NoneCompressor(Compressor):
    pass


def compression_for(is_floating, cast, half):
    """Horovod's Compression class for tensors where is_floating(tensor)
    tells a floating dtype, cast(tensor, dtype) converts and half is float16."""

    class FP16Compressor(Compressor):
        @staticmethod
        def compress(tensor):
            if is_floating(tensor) and tensor.dtype != half:
                return cast(tensor, half), tensor.dtype
            return tensor, None

        @staticmethod
        def decompress(tensor, ctx):
            return tensor if ctx is None else cast(tensor, ctx)

    class Compression:
        none = NoneCompressor
        fp16 = FP16Compressor

    return Compression
