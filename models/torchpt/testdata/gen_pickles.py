# Writes protoN.pkl (N = 0..5): a torch.save-shaped pickle made with the
# standard pickle module and stand-in torch/numpy classes (no torch needed).
# The Go tests wrap each in a zip with storages "0" (6 float32: 0..5) and
# "1" (4 int64: 10..13). Regenerate with: python3 gen_pickles.py
import collections, pickle, sys, types

def module(name):
    m = types.ModuleType(name)
    sys.modules[name] = m
    return m

torch = module("torch")
tutils = module("torch._utils")
tver = module("torch.torch_version")
np = module("numpy")
npcore = module("numpy.core")
npma = module("numpy.core.multiarray")

def storage_class(name):
    c = type(name, (), {})
    c.__module__ = "torch"
    setattr(torch, name, c)
    return c

FloatStorage = storage_class("FloatStorage")
LongStorage = storage_class("LongStorage")

def _rebuild_tensor_v2(*a):
    raise RuntimeError("never called")
_rebuild_tensor_v2.__module__ = "torch._utils"
tutils._rebuild_tensor_v2 = _rebuild_tensor_v2

class TorchVersion(str):
    pass
TorchVersion.__module__ = "torch.torch_version"
TorchVersion.__qualname__ = "TorchVersion"
tver.TorchVersion = TorchVersion

class Storage:
    def __init__(self, cls, key, numel, location="cpu"):
        self.cls, self.key, self.numel, self.location = cls, key, numel, location

class Tensor:
    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, size, stride, False, collections.OrderedDict())
    def __reduce_ex__(self, proto):
        return (_rebuild_tensor_v2, self.args)

def scalar(*a):
    raise RuntimeError("never called")
scalar.__module__ = "numpy.core.multiarray"
npma.scalar = scalar

class dtype:
    def __init__(self, code):
        self.code = code
    def __reduce__(self):
        return (dtype, (self.code, False, True), (3, "<", None, None, None, -1, -1, 0))
dtype.__module__ = "numpy"
np.dtype = dtype

class F8:
    def __init__(self, v):
        self.v = v
    def __reduce__(self):
        import struct
        return (scalar, (dtype("f8"), struct.pack("<d", self.v)))

class P(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            return ("storage", obj.cls, obj.key, obj.location, obj.numel)
        return None

def payload(proto):
    s0 = Storage(FloatStorage, "0", 6, "cuda:0")
    s1 = Storage(LongStorage, "1", 4, "mps")
    sd = collections.OrderedDict()
    sd["module.w"] = Tensor(s0, 0, (2, 3), (3, 1))
    sd["_orig_mod.module.wt"] = Tensor(s0, 0, (3, 2), (1, 3))
    sd["row1"] = Tensor(s0, 3, (3,), (1,))
    sd["pos_idxs"] = Tensor(s1, 0, (4,), (1,))
    sd["blocks.0.attn.tril"] = Tensor(s1, 0, (2, 2), (2, 1))
    sd._metadata = collections.OrderedDict([("", {"version": 1})])
    shared = [1, 2]
    cfg = {
        "n_embed": 64, "neg": -7, "big": 2**40, "huge": 2**70, "f": 1.5,
        "t": True, "no": False, "none": None, "text": "h\u00e9llo \u2603 \U0001F600",
        "bytes": b"\x00\xff", "tuple": (1, "a"), "empty": (), "nested": {"x": {}},
        "shared": [shared, shared], "set": {3}, "frozen": frozenset([4]),
        "long": "x" * 300, (1, "k"): "tuplekey", 5: "intkey",
        "tokenizer": {"merges": [[i, i + 1] for i in range(300)]},
    }
    top = {"model_state_dict": sd, "optimizer_state_dict": {"state": {0: {"exp_avg": Tensor(Storage(FloatStorage, "missing", 6), 0, (6,), (1,))}}}, "config": cfg,
           "losses": [1.25, F8(0.5)], "stage": "sft", "step": 7}
    if proto >= 2:
        top["pytorch_version"] = TorchVersion("2.1.0")
    return top

for proto in range(6):
    import io
    buf = io.BytesIO()
    P(buf, protocol=proto).dump(payload(proto))
    with open("proto%d.pkl" % proto, "wb") as f:
        f.write(buf.getvalue())

# Protocol 0 writes persistent ids as text (torch never does this), so the
# text opcodes are also covered by plain0.pkl: the config dict alone.
with open("plain0.pkl", "wb") as f:
    f.write(pickle.dumps(payload(0)["config"], protocol=0))
