"""The Python that the command-line tests run, in one checked-in place.

    python3 checks.py <name> [ARG...]

lib.sh names this file $CHECKS and runs it as `checks_py <name> ARG...`. Each
function below is one <name> (its underscores as dashes): a check of what
the runner wrote, which prints its verdict or facts for the shell to judge,
or a fixture a test needs that the shell cannot easily make. Only the
standard library, so any python3 runs it.
"""

import html.parser
import json
import random
import re
import signal
import socket
import sys
import urllib.parse
import xml.etree.ElementTree as ET


def json_each(path, spec):
    """For lib.sh's expect_json_each: PATH as JSON, bound to `d`, and SPEC's
    lines "WHAT :: PYTHON-EXPR" each evaluated, printing "PASS WHAT" or
    "FAIL WHAT: why", and the document once after the first failure."""
    checks = [line.strip().split(" :: ", 1) for line in spec.splitlines() if " :: " in line]
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except Exception as e:
        for what, expr in checks:
            print(f"FAIL {what}: {path} is not valid JSON: {e}")
        return
    shown = False
    for what, expr in checks:
        try:
            good = bool(eval(expr, {"d": d, "json": json, "re": re}))
            why = "is false"
        except Exception as e:
            good, why = False, f"raised {e!r}"
        print(f"PASS {what}" if good else f"FAIL {what}: `{expr}` {why}")
        if not good and not shown:
            shown = True
            print(json.dumps(d, indent=1)[:3000])


def jsonl_lines(*paths):
    """Prints "FILE:LINE: why" for each line of the JSON Lines files PATHS
    that is not one newline-terminated JSON object; nothing when all are."""
    for name in paths:
        with open(name, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                try:
                    assert line.endswith("\n"), "not newline-terminated"
                    assert isinstance(json.loads(line), dict), "not a JSON object"
                except Exception as e:
                    print(f"{name}:{n}: {e}")


def page_summary(path, kind):
    """Facts about an SVG (KIND svg) or an HTML page or a DOM dumped by
    Chromium (KIND html), as JSON for expect_json_each: an SVG's root, graph
    nodes, title, legend, fills and fonts; a page's rows, the nodes and
    edges of the drawing it shows (not of one it hides), its panel, ready
    and error markers, and the JSON its <script id="graph-data"> holds
    (null when it does not parse)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if kind == "svg":
        print(json.dumps(_svg_summary(text)))
        return
    page = _Page()
    page.feed(text)
    d = page.d
    d["tables"] = {t: len([r for r in d["rows"] if r["table"] == t])
                   for t in ("builds", "artifacts", "producers", "consumers")}
    # What could make the browser fetch something: a URL scheme (the SVG
    # namespace declarations aside), a src/href/srcset attribute, url() other
    # than a #fragment, @import, or an element that loads by nature.
    bare = re.sub(r'xmlns(:\w+)?="http://www\.w3\.org/[^"]*"', "", text)
    d["network"] = sorted(set(re.findall(r"(?i)\b(?:https?|ftp|wss?):", bare)
                              + re.findall(r"(?i)\s(?:src|href|srcset|action|poster)\s*=", bare)
                              + re.findall(r"(?i)url\(\s*['\"]?[^#'\")\s]", bare)
                              + re.findall(r"(?i)@import|<(?:link|img|iframe|object|embed|audio|video)\b", bare)))
    d["csp"] = bool(re.search(r"""<meta http-equiv="Content-Security-Policy" content="default-src 'none';""", text))
    print(json.dumps(d))


def _svg_summary(text):
    ns = "{http://www.w3.org/2000/svg}"
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        return {"xml_error": str(e)}
    groups = list(root.iter(ns + "g"))
    nodes = [g.find(ns + "title").text for g in groups if g.get("class") == "node"]
    graph = next((g for g in groups if g.get("class") == "graph"), root)
    # The graph's own label (title, legend, note) is its direct <text>s; a
    # legend entry is a text on a filled cell: {text: fill}.
    heading = [t.text or "" for t in graph.findall(ns + "text")]
    legend, fill = {}, None
    for child in graph:
        if child.tag == ns + "polygon" and child.get("fill") not in ("none", "white", "transparent"):
            fill = child.get("fill")
        elif child.tag == ns + "text":
            if fill:
                legend[child.text] = fill
            fill = None
    fills = {g.find(ns + "title").text: [p.get("fill") for p in g if p.tag in (ns + "path", ns + "polygon")]
             for g in groups if g.get("class") == "node"}
    width, height = (float(re.sub(r"[a-z]+$", "", root.get(k, "0"))) for k in ("width", "height"))
    return {"xml_error": None, "root": root.tag, "nodes": nodes, "heading": heading,
            "legend": legend,
            "fills": fills, "fonts": sorted({t.get("font-family") for t in root.iter(ns + "text")}),
            "width": width, "height": height}


class _Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.d = {"ready": None, "error": None, "tags": [], "ids": [], "rows": [], "nodes": [],
                  "count": "", "graph_data": None, "graph_data_raw": None, "layout": False, "notes": [],
                  "edges": [], "panel": None}
        self.table = None
        self.tbody = False
        self.row = self.node = self.into = None
        self.script = None
        self.hidden_view = False  # inside the drawing the page does not show
        self.panel = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        d = self.d
        d["tags"].append(tag)
        if "id" in a:
            d["ids"].append(a["id"])
        if tag in ("html", "body"):
            d["ready"] = a.get("data-ready", d["ready"])
            d["error"] = a.get("data-error", d["error"])
        elif tag == "table":
            self.table = a.get("id")
        elif tag == "tbody":
            self.tbody = True
        elif tag == "tr" and self.tbody:
            self.row = {"table": self.table, "hidden": "hidden" in a, "text": ""}
        elif tag == "div" and "view" in a.get("class", "").split():
            self.hidden_view = "hidden" in a
        elif tag == "aside" and a.get("id") == "panel":
            self.panel = d["panel"] = {"hidden": "hidden" in a, "kind": a.get("data-kind"), "text": ""}
        elif tag == "g" and {"node", "edge"} & set(a.get("class", "").split()) and not self.hidden_view:
            classes = a.get("class", "").split()
            self.node = {"title": "", "kind": classes[0] if classes[0] in ("node", "edge") else classes[1],
                         "dim": "dim" in classes, "match": "match" in classes, "open": "open" in classes}
        elif tag == "title" and self.node is not None:
            self.into = "node"
        elif tag == "span" and a.get("id") == "count":
            self.into = "count"
        elif tag == "p" and "note" in a.get("class", ""):
            d["notes"].append("")
            self.into = "note"
        elif tag == "svg" and "layout" in a.get("class", "").split():
            d["layout"] = True
        elif tag == "script" and a.get("id") == "graph-data":
            self.script = ""
            d["graph_data_raw"] = ""

    def handle_endtag(self, tag):
        if tag == "tr" and self.row is not None:
            self.d["rows"].append(self.row)
            self.row = None
        elif tag == "tbody":
            self.tbody = False
        elif tag == "title" and self.into == "node":
            self.d["nodes" if self.node.pop("kind") == "node" else "edges"].append(self.node)
            self.node = self.into = None
        elif tag == "div":
            self.hidden_view = False
        elif tag == "aside":
            self.panel = None
        elif tag in ("span", "p"):
            self.into = None
        elif tag == "script" and self.script is not None:
            try:
                self.d["graph_data"] = json.loads(self.script)
            except ValueError:
                pass
            self.script = None

    def handle_data(self, data):
        if self.panel is not None:
            self.panel["text"] += data + " "
        if self.row is not None:
            self.row["text"] += data + " "
        if self.script is not None:
            self.script += data
            self.d["graph_data_raw"] += data
        if self.into == "node":
            self.node["title"] += data
        elif self.into == "count":
            self.d["count"] += data
        elif self.into == "note":
            self.d["notes"][-1] += data


def json_get(path, key):
    """Prints the value of KEY in the JSON object in PATH."""
    with open(path, encoding="utf-8") as f:
        print(json.load(f)[key])


def json_set(path, key, value):
    """Sets KEY of the JSON object in PATH to VALUE (JSON text)."""
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    d[key] = json.loads(value)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(d, f)


def random_bytes(seed, size):
    """SIZE bytes, the same for the same SEED (no /dev/urandom: reruns agree)."""
    sys.stdout.buffer.write(random.Random(seed).randbytes(int(size)))


def unescape_line(line):
    """The raw bytes of one reverse-index or journal line: a backslash and
    'n' stand for a newline byte, two backslashes for one. Read left to
    right, so an escaped backslash followed by 'n' stays a backslash and an
    'n'."""
    raw, i = bytearray(), 0
    while i < len(line):
        if line[i:i + 1] == b"\\":
            raw += b"\n" if line[i + 1:i + 2] == b"n" else b"\\"
            i += 2
        else:
            raw += line[i:i + 1]
            i += 1
    return bytes(raw)


def reverse_index(*paths):
    """The manifests each line of the reverse indexes PATHS names, one hex
    digest a line: a line is the raw digest with newline bytes written as
    a backslash and 'n', backslashes as two; or, in the first format-2
    stores, a role letter and the hex."""
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        for line in data.split(b"\n")[:-1]:
            if len(line) == 65 and line[:1] in b"lcid":
                print(line[1:].decode())
                continue
            raw = unescape_line(line)
            print(raw.hex() if len(raw) == 32 else "not-a-digest:" + line.hex())


def journal(*paths):
    """Each line of the reverse index's journals PATHS as the hex digests it
    holds, the manifest's first, separated by spaces: a line is the raw
    digests one after the other, each newline byte written as a backslash
    and 'n', each backslash as two."""
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        for line in data.split(b"\n")[:-1]:
            raw = unescape_line(line)
            if len(raw) % 32:
                print("not-a-journal-line:" + line.hex())
            else:
                print(" ".join(raw[j:j + 32].hex() for j in range(0, len(raw), 32)))


def deep_array():
    """One JSON line of 10,000 nested arrays."""
    sys.stdout.write("[" * 10000 + "]" * 10000 + "\n")


def deep_object():
    """One JSON line of 10,000 nested objects."""
    sys.stdout.write('{"v":' * 10000 + "1" + "}" * 10000 + "\n")


def url_quote(text):
    """TEXT percent-encoded for a URL's fragment."""
    print(urllib.parse.quote(text))


def free_port():
    """A loopback port nobody listens on: the kernel's choice, closed again."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])


def silent_listener():
    """Listens on a loopback port (printed first) and accepts connections but
    never answers, for 300 s at the most."""
    signal.alarm(300)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    print(s.getsockname()[1], flush=True)
    held = []
    while True:
        c, _ = s.accept()
        held.append(c)


def main(argv):
    commands = {f.__name__.replace("_", "-"): f for f in (
        json_each, jsonl_lines, page_summary, json_get, json_set, random_bytes, reverse_index, journal, deep_array, deep_object,
        url_quote, free_port, silent_listener)}
    if len(argv) < 2 or argv[1] not in commands:
        sys.exit(f"usage: {argv[0]} {{{'|'.join(commands)}}} [ARG...]")
    commands[argv[1]](*argv[2:])


if __name__ == "__main__":
    main(sys.argv)
