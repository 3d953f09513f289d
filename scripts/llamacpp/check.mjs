// llama.cpp's greedy ids and tokenization of GGUF files this project wrote (chat convert, merge-lora), through
// node-llama-cpp 3.21.1 installed by ../../../shared/bench/llamacpp.sh --install. Used by the tests of
// models/convert and models/lora when CHAT_LLAMACPP=1; no llama.cpp code is part of this project.
//
// usage: node check.mjs NLC_CACHE_DIR REQUEST.json    (prints one JSON result on stdout)
//   REQUEST: {"model": FILE, "lora": [FILE, SCALE]?, "prompts": [[ids...], ...], "n_gen": N, "texts": [strings]?,
//             "n_ctx": N?, "embed": [[ids...], ...]?}
//   RESULT:  {"greedy": [[ids...], ...], "top2": [[[[id, logprob], [id, logprob]], ...one per step], ...],
//             "tokens": [[ids...]...], "tokens_special": [[ids...]...], "embeddings": [[floats...]...],
//             "system_info": "..."}
//   top2 is llama.cpp's two most probable tokens at each greedy step, with their log-probabilities.
// Settings as in reference.mjs: CPU, 1 thread, n_ctx = the model's (at most 512) or n_ctx, F32 K and V cache, flash
// attention off, greedy (temperature 0), no repeat penalty, EOG tokens yielded, a fresh sequence per prompt.
// embeddings: node-llama-cpp's embedding context (its own settings: an f16 cache) on each id list; for a
// model without a pooling type, llama.cpp's embedding of the last position (its final hidden state).
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const [cache, requestPath] = process.argv.slice(2);
if (!cache || !requestPath) {
  console.error("usage: node check.mjs NLC_CACHE_DIR REQUEST.json");
  process.exit(2);
}
const {getLlama, LlamaLogLevel} = await import(pathToFileURL(path.join(cache, "node_modules/node-llama-cpp/dist/index.js")).href);
const req = JSON.parse(fs.readFileSync(requestPath, "utf8"));

const llama = await getLlama({
  gpu: false, build: "never", logLevel: LlamaLogLevel.error,
  logger: (level, message) => process.stderr.write(message.endsWith("\n") ? message : message + "\n"),
});
const model = await llama.loadModel({modelPath: req.model, gpuLayers: 0});
const out = {system_info: llama.systemInfo, greedy: [], top2: [], tokens: [], tokens_special: [], embeddings: []};
for (const text of req.texts ?? []) {
  out.tokens.push(Array.from(model.tokenize(text, false)));
  out.tokens_special.push(Array.from(model.tokenize(text, true)));
}
if ((req.prompts ?? []).length > 0) {
  const ctx = await model.createContext({
    contextSize: req.n_ctx ?? Math.min(512, model.trainContextSize), batchSize: 512, sequences: 1,
    threads: {ideal: 1, min: 1}, flashAttention: false,
    experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
    lora: req.lora ? {adapters: [{filePath: req.lora[0], scale: req.lora[1]}]} : undefined,
  });
  const seq = ctx.getSequence();
  for (const prompt of req.prompts) {
    await seq.clearHistory();
    const ids = [], top2 = [];
    const n = Math.min(req.n_gen, ctx.contextSize - prompt.length);
    if (n > 0) {
      const it = seq.evaluateWithMetadata(prompt, {probabilities: true},
        {temperature: 0, repeatPenalty: false, yieldEogToken: true});
      for await (const o of it) {
        ids.push(o.token);
        const best = []; // the map is sorted by probability, highest first
        for (const [tok, p] of o.probabilities) {
          best.push([tok, Math.log(p)]);
          if (best.length === 2) break;
        }
        top2.push(best);
        if (ids.length >= n) break;
      }
    }
    out.greedy.push(ids);
    out.top2.push(top2);
  }
  await ctx.dispose();
}
if ((req.embed ?? []).length > 0) {
  const ctx = await model.createEmbeddingContext({contextSize: req.n_ctx ?? Math.min(512, model.trainContextSize), threads: 1});
  for (const ids of req.embed) {
    out.embeddings.push(Array.from((await ctx.getEmbeddingFor(ids)).vector));
  }
  await ctx.dispose();
}
await model.dispose();
await llama.dispose();
console.log(JSON.stringify(out));
