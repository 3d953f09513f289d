#!/usr/bin/env python3
"""Render a chat template as Hugging Face transformers does.

usage: scripts/render-chat-template.py TEMPLATE.jinja < cases.json

cases.json is a list of cases, each {"messages": [{"role", "content"}...],
"add_generation_prompt": bool, "bos_token": str, "eos_token": str,
"now": "YYYY-MM-DDTHH:MM:SS"}. It prints a JSON list with, per case,
{"text": rendered} or {"error": "ExceptionType: message"}.

The environment is transformers' _compile_jinja_template
(src/transformers/utils/chat_template_utils.py): ImmutableSandboxedEnvironment
with trim_blocks, lstrip_blocks and the loopcontrols extension, {% generation %}
rendering its body, tojson as json.dumps with ensure_ascii=False,
raise_exception and strftime_now globals; render_jinja_template passes
tools=None and documents=None. strftime_now reads the case's "now" so that
the result does not depend on the clock. Needs jinja2 >= 3.1.
"""
import datetime
import json
import sys

import jinja2
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Generation(Extension):
    """transformers' AssistantTracker without the tracking: the body as is."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: render-chat-template.py TEMPLATE.jinja < cases.json")
    with open(sys.argv[1], encoding="utf-8") as f:
        source = f.read()
    cases = json.load(sys.stdin)
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, "jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    now = [datetime.datetime.now()]
    env.globals["strftime_now"] = lambda fmt: now[0].strftime(fmt)
    out = []
    try:
        template = env.from_string(source)
    except Exception as e:  # a template that does not parse fails every case
        sys.stdout.write(json.dumps([{"error": f"{type(e).__name__}: {e}"}] * len(cases)) + "\n")
        return
    for c in cases:
        if c.get("now"):
            now[0] = datetime.datetime.fromisoformat(c["now"])
        try:
            text = template.render(messages=c["messages"], tools=None, documents=None,
                                   add_generation_prompt=c.get("add_generation_prompt", False),
                                   bos_token=c.get("bos_token", ""), eos_token=c.get("eos_token", ""))
            out.append({"text": text})
        except Exception as e:
            out.append({"error": f"{type(e).__name__}: {e}"})
    sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
