# temporary probe (deleted after use)
import sys, cProfile, pstats, io, time
sys.path.insert(0, '.')
import numpy as np
from examples import vector_add as va
from cubepy.backends.wgsl.buffers import DeviceArray
from cubepy.backends.wgsl.device import get_device
x = DeviceArray.from_numpy(np.ones(1024, np.float32)); out = DeviceArray.empty((1024,), "float32")
dev = get_device()
for _ in range(20): va.add_kernel[(4,)](x, x, out, 1024, BLOCK=256)
dev.stream.synchronize()
t = time.perf_counter()
for _ in range(1000): va.add_kernel[(4,)](x, x, out, 1024, BLOCK=256)
t1 = time.perf_counter(); dev.stream.synchronize(); t2 = time.perf_counter()
print(f"host loop {1e3*(t1-t):.2f} us/launch, sync {1e3*(t2-t1):.1f} ms total")
pr = cProfile.Profile(); pr.enable()
for _ in range(1000): va.add_kernel[(4,)](x, x, out, 1024, BLOCK=256)
dev.stream.synchronize()
pr.disable()
st = io.StringIO(); pstats.Stats(pr, stream=st).sort_stats('tottime').print_stats(18); print(st.getvalue()[-5000:])
