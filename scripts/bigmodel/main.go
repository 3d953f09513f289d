// Command bigmodel writes a random-weight stand-in for Llama 3.2 1B
// Instruct: the real model's shape and hyperparameters, the real Llama 3
// vocabulary and merges (copied from ggml-vocab-llama-bpe.gguf), its EOS
// (<|eot_id|>, as the Instruct GGUFs set it) and its chat template, with
// weights from models/llama/randmodel. The text it generates is gibberish;
// the point is a file a user could have downloaded, so that loading, memory,
// the context length, the TUI, the server and the speed can be tried on a
// 1B-class model without the download.
//
// usage: go run ./scripts/bigmodel -out DIR [-vocab FILE] [-type f16|f32|q8_0]
//
// It writes DIR/llama3.2-1b-random-TYPE.gguf (F16: 2.5 GB, about 20 s and
// 3.5 GB of memory). Make the other types with chat convert:
//
//	chat convert DIR/llama3.2-1b-random-f16.gguf DIR/llama3.2-1b-random-q8_0.gguf --type q8_0
//	chat convert DIR/llama3.2-1b-random-f16.gguf DIR/llama3.2-1b-random-q4_k_m.gguf --type q4_k
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"chat/models/gguf"
	"chat/models/llama/randmodel"
)

// llama32Template is tokenizer_config.json's chat_template of
// meta-llama/Llama-3.2-1B-Instruct (Hugging Face), which convert_hf_to_gguf
// copies into tokenizer.chat_template: a system header with the knowledge
// and today's date, tools in the first user message, <|eot_id|> after every
// turn. session/chattmpl's tests render the same template.
const llama32Template = `{{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- if strftime_now is defined %}
        {%- set date_string = strftime_now("%d %b %Y") %}
    {%- else %}
        {%- set date_string = "26 Jul 2024" %}
    {%- endif %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message #}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{#- Custom tools are passed in a user message with some extra guidance #}
{%- if tools_in_user_message and not tools is none %}
    {#- Extract the first user message so we can plug it in here #}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
{%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
        {{- '{"name": "' + tool_call.name + '", ' }}
        {{- '"parameters": ' }}
        {{- tool_call.arguments | tojson }}
        {{- "}" }}
        {{- "<|eot_id|>" }}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
`

func main() {
	out := flag.String("out", "", "folder for the .gguf file (required)")
	vocabPath := flag.String("vocab", "../shared/models/vocab/ggml-vocab-llama-bpe.gguf", "the Llama 3 vocabulary file")
	typ := flag.String("type", "f16", "the 2-D weights' type: f16, f32 or q8_0")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	path, err := run(*out, *vocabPath, *typ)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bigmodel:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}

func run(out, vocabPath, typ string) (string, error) {
	t, ok := map[string]gguf.Type{"f16": gguf.TypeF16, "f32": gguf.TypeF32, "q8_0": gguf.TypeQ8_0}[typ]
	if !ok {
		return "", fmt.Errorf("-type %q: f16, f32 or q8_0", typ)
	}
	vocab, err := gguf.Open(vocabPath)
	if err != nil {
		return "", err
	}
	defer vocab.Close()
	const eot = 128009 // <|eot_id|>: eos_token of the Instruct tokenizer_config.json
	if toks, ok := vocab.Strings("tokenizer.ggml.tokens"); !ok || len(toks) != 128256 || toks[eot] != "<|eot_id|>" {
		return "", fmt.Errorf("%s is not the Llama 3 vocabulary (128256 tokens, %d <|eot_id|>)", vocabPath, eot)
	}
	var tok []gguf.KV
	for _, kv := range vocab.KV {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			continue
		}
		if kv.Key == "tokenizer.ggml.eos_token_id" {
			kv.Value = uint32(eot)
		}
		tok = append(tok, kv)
	}
	tok = append(tok, gguf.KV{Key: "tokenizer.chat_template", Type: gguf.String, Value: llama32Template})

	// config.json of meta-llama/Llama-3.2-1B-Instruct.
	s := randmodel.Spec{
		Name: "llama3.2-1b-random-" + typ, GeneralName: "Llama 3.2 1B Instruct (random weights)",
		Arch: "llama", Tokens: tok,
		Dim: 2048, Layers: 16, FFN: 8192, Heads: 32, KVHeads: 8, HeadDim: 64,
		Context: 131072, Eps: 1e-5,
		RopeBase: 500000, Llama3Freqs: true,
		Llama3: randmodel.Llama3Rope{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 8192},
		Tied:   true, Type: t, Seed: 32,
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(out, s.Name+".gguf")
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return "", err
	}
	err = randmodel.Write(f, s, nil)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(path+".tmp", path)
	}
	if err != nil {
		os.Remove(path + ".tmp")
		return "", err
	}
	return path, nil
}
