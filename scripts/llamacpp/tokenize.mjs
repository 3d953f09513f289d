// llama.cpp's tokenization of texts under several GGUF files, in one process, through node-llama-cpp 3.21.1
// installed by ../../../shared/bench/llamacpp.sh --install. Used by the pre-tokenizer test of models/llama when
// CHAT_LLAMACPP=1; no llama.cpp code is part of this project.
//
// usage: node tokenize.mjs NLC_CACHE_DIR REQUEST.json    (prints one JSON result on stdout)
//   REQUEST: {"models": [{"model": FILE, "texts": [strings]}, ...]}
//   RESULT:  {"results": [{"tokens": [[ids...]...], "tokens_special": [[ids...]...], "detok": [strings], "error": "..."}, ...]}
//   tokens is llama_tokenize without BOS and with special-token text as plain text; tokens_special parses it;
//   detok is llama_detokenize of tokens (remove_special and unparse_special false, so clean_spaces shows).
//   A model llama.cpp refuses to load (an unknown tokenizer.ggml.pre, say) gives its error and no tokens.
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const [cache, requestPath] = process.argv.slice(2);
if (!cache || !requestPath) {
  console.error("usage: node tokenize.mjs NLC_CACHE_DIR REQUEST.json");
  process.exit(2);
}
const {getLlama, LlamaLogLevel} = await import(pathToFileURL(path.join(cache, "node_modules/node-llama-cpp/dist/index.js")).href);
const req = JSON.parse(fs.readFileSync(requestPath, "utf8"));

const llama = await getLlama({
  gpu: false, build: "never", logLevel: LlamaLogLevel.error,
  logger: (level, message) => process.stderr.write(message.endsWith("\n") ? message : message + "\n"),
});
const results = [];
for (const m of req.models) {
  const r = {tokens: [], tokens_special: [], detok: [], error: ""};
  let model;
  try {
    model = await llama.loadModel({modelPath: m.model, gpuLayers: 0, vocabOnly: true});
  } catch (e) {
    r.error = String(e?.message ?? e);
    results.push(r);
    continue;
  }
  for (const text of m.texts ?? []) {
    const ids = model.tokenize(text, false);
    r.tokens.push(Array.from(ids));
    r.detok.push(model.detokenize(ids, false));
    r.tokens_special.push(Array.from(model.tokenize(text, true)));
  }
  await model.dispose();
  results.push(r);
}
await llama.dispose();
console.log(JSON.stringify({results}));
