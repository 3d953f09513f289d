// llama.cpp's greedy ids on the random-weight fixture models, through node-llama-cpp 3.21.1 (prebuilt CPU binaries).
// Normally started by regen.sh, which installs node-llama-cpp with ../../../shared/bench/llamacpp.sh --install and
// copies this file into that cache folder (an ES module resolves "node-llama-cpp" from the folder the script is in).
//
// usage: node reference.mjs MANIFEST.json OUTDIR
//   MANIFEST.json is what scripts/llamacpp/mkmodels prints: [{name, arch, type, file, sha256, vocab, input_ids}, ...].
//   Writes OUTDIR/NAME.json for each model (format "llamacpp-fixture v1", see scripts/llamacpp/README.md).
//
// Settings (as in shared/models/stories260K/golden-llamacpp.json): CPU only, 1 thread, n_ctx 512, n_batch 512, one
// sequence, F32 K and V cache, flash attention OFF (ggml's CPU flash attention rounds K/V to F16), greedy sampling
// (temperature 0 = argmax), no repeat penalty, EOG tokens yielded (generation does not stop at EOS).
import fs from "node:fs";
import path from "node:path";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const NGEN = 64, TOPK = 5, AT = [0, 10, 63];

const [manifestPath, outDir] = process.argv.slice(2);
if (!manifestPath || !outDir) {
  console.error("usage: node reference.mjs MANIFEST.json OUTDIR");
  process.exit(2);
}
const manifest = JSON.parse(fs.readFileSync(manifestPath, "utf8"));
fs.mkdirSync(outDir, {recursive: true});

const logs = [];
const llama = await getLlama({
  gpu: false, build: "never", logLevel: LlamaLogLevel.info,
  logger: (level, message) => {
    logs.push(...message.split("\n"));
    if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) process.stderr.write(message.endsWith("\n") ? message : message + "\n");
  },
});
const pkg = (p) => JSON.parse(fs.readFileSync(new URL(p, import.meta.url), "utf8"));
const nlc = pkg("./node_modules/node-llama-cpp/package.json");
let prebuilt = null;
for (const name of ["linux-x64", "linux-arm64", "mac-arm64-metal", "mac-x64"]) {
  try { prebuilt = `@node-llama-cpp/${name}@` + pkg(`./node_modules/@node-llama-cpp/${name}/package.json`).version; break; } catch {}
}
const release = pkg("./node_modules/node-llama-cpp/llama/binariesGithubRelease.json").release;

const r7 = (x) => Number(x.toPrecision(7));
let failed = false;
for (const e of manifest) {
  logs.length = 0;
  const model = await llama.loadModel({modelPath: e.file, gpuLayers: 0});
  const ctx = await model.createContext({
    contextSize: 512, batchSize: 512, sequences: 1,
    threads: {ideal: 1, min: 1}, flashAttention: false,
    experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
  });
  const seq = ctx.getSequence();
  const ids = [], top5 = {}, gaps = [];
  const it = seq.evaluateWithMetadata(e.input_ids, {probabilities: true},
    {temperature: 0, repeatPenalty: false, yieldEogToken: true});
  for await (const out of it) {
    const k = ids.length;
    ids.push(out.token);
    // The map is sorted by probability, highest first.
    const best = [];
    for (const [tok, p] of out.probabilities) {
      best.push([tok, p]);
      if (best.length === TOPK) break;
    }
    if (best[0][0] !== out.token) {
      console.error(`reference.mjs: ${e.name} step ${k}: greedy token ${out.token} is not the most probable ${best[0][0]}`);
      failed = true;
    }
    gaps.push(r7(Math.log(best[0][1]) - Math.log(best[1][1])));
    if (AT.includes(k)) top5[String(k)] = best.map(([tok, p]) => [tok, r7(Math.log(p))]);
    if (ids.length >= NGEN) break;
  }
  const ctxLog = logs.filter((l) => /^(print_info: (arch|n_rot|rope type|rope scaling|freq_base_train|freq_scale_train|vocab type|n_vocab) |llama_context: (n_ctx|n_batch|flash_attn|freq_base|freq_scale) |llama_kv_cache: size)/.test(l));
  const fixture = {
    format: "llamacpp-fixture v1",
    name: e.name,
    arch: e.arch,
    type: e.type,
    model: {file: path.basename(e.file), sha256: e.sha256, vocab: e.vocab},
    producer: {
      node_llama_cpp: nlc.version,
      prebuilt,
      llama_cpp_repo: "ggml-org/llama.cpp",
      llama_cpp_release: release,
      system_info: llama.systemInfo,
      settings: "CPU, 1 thread, n_ctx 512, n_batch 512, KV F32, flash attention off, greedy (temperature 0), no repeat penalty, EOG yielded",
      context_log: ctxLog.map((l) => l.trim()),
    },
    input_ids: e.input_ids,
    n_gen: NGEN,
    greedy_ids: ids,
    top1_top2_logprob_gap: gaps,
    top5_logprobs: top5,
  };
  fs.writeFileSync(path.join(outDir, e.name + ".json"), JSON.stringify(fixture, null, 1) + "\n");
  const distinct = new Set(ids).size;
  console.error(`reference.mjs: ${e.name}: ${ids.length} ids, ${distinct} distinct, smallest top-2 gap ${Math.min(...gaps).toExponential(2)}`);
  await ctx.dispose();
  await model.dispose();
}
await llama.dispose();
process.exit(failed ? 1 : 0);
