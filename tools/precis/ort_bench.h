/* The ONNX Runtime side of `precis bench --vs-ort`: a Python program run
 * with the same model, the same .npy inputs and the same thread count;
 * prints one JSON line {"latencies_ms": [...]} (or {"error": "..."}). */
#ifndef PRECIS_ORT_BENCH_H
#define PRECIS_ORT_BENCH_H

static const char k_ort_bench_py[] =
    "import json, sys, time\n"
    "try:\n"
    "    import numpy as np, onnxruntime as ort\n"
    "    model, threads, warmup, iters = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])\n"
    "    feeds = {}\n"
    "    for a in sys.argv[5:]:\n"
    "        name, path = a.split('=', 1)\n"
    "        feeds[name] = np.load(path)\n"
    "    so = ort.SessionOptions()\n"
    "    so.intra_op_num_threads = threads\n"
    "    so.inter_op_num_threads = 1\n"
    "    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL\n"
    "    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL\n"
    "    s = ort.InferenceSession(model, so, providers=['CPUExecutionProvider'])\n"
    "    for _ in range(warmup): s.run(None, feeds)\n"
    "    lat = []\n"
    "    for _ in range(iters):\n"
    "        t = time.perf_counter(); s.run(None, feeds); lat.append((time.perf_counter() - t) * 1e3)\n"
    "    print(json.dumps({'latencies_ms': lat, 'version': ort.__version__}))\n"
    "except Exception as e:\n"
    "    print(json.dumps({'error': str(e).splitlines()[0] if str(e) else type(e).__name__}))\n";

#endif
