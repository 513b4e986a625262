// The behaviour of `fingerprint graph --format html`. Everything is drawn
// from the JSON in <script id="graph-data"> (graph_html.cpp says what it
// holds): the tables, a panel per artifact, build, node and edge, and,
// without Graphviz, the graph itself. The address says what is open
// (#artifact=DIGEST, #build=PROJECT,BUILD, #node=NAME, #edge=FROM,TO, with
// q=TEXT for the search and toolchain=1 for the toggle, joined by &), so a
// view can be shared and reopened.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("graph-data").textContent);
  var q = document.getElementById("q");
  var toggle = document.getElementById("toolchain");
  var count = document.getElementById("count");
  var panel = document.getElementById("panel");
  var panelBody = document.getElementById("panel-body");
  // A table shows this many rows, then a button for as many more: the DOM
  // of 10,000 rows, not the data, is what makes a large store's page slow.
  var PAGE = 200;

  // ---- The data, indexed ----------------------------------------------------

  var artifacts = data.artifacts, builds = data.builds, events = data.events;
  var byArtifact = artifacts.map(function () { return []; });
  var byBuild = builds.map(function () { return []; });
  var byPath = {};
  events.forEach(function (e) {
    byArtifact[e.artifact].push(e);
    byBuild[e.build].push(e);
  });
  artifacts.forEach(function (a, i) {
    a.index = i;
    a.name = a.paths.length ? baseName(a.paths[0]) : a.digest.slice(0, 19) + "\u2026";
    a.producers = byArtifact[i].filter(function (e) { return e.kind !== "consumed"; });
    a.consumers = byArtifact[i].filter(function (e) { return e.kind === "consumed"; });
    a.time = byArtifact[i].reduce(function (t, e) { return t && t < e.time ? t : e.time; }, "");
    a.version = a.producers.length ? builds[a.producers[0].build].version : "";
    a.paths.forEach(function (path) { (byPath[path] = byPath[path] || []).push(a); });
  });
  // The Debian package (or "(no producer)") a toolchain file is drawn from.
  var origin = {};
  if (data.toolchain) {
    data.toolchain.edges.forEach(function (edge) {
      edge.artifacts.forEach(function (i) {
        if (artifacts[i].toolchain) {
          origin[i] = edge.from;
        }
      });
    });
  }
  builds.forEach(function (b, i) {
    b.index = i;
    b.key = b.project + "," + b.build;
    b.produced = byBuild[i].filter(function (e) { return e.kind !== "consumed"; });
    b.consumed = byBuild[i].filter(function (e) { return e.kind === "consumed"; });
  });
  var buildByKey = {};
  builds.forEach(function (b) { buildByKey[b.key] = b; });
  var artifactByDigest = {};
  artifacts.forEach(function (a) { artifactByDigest[a.digest] = a; });

  function baseName(path) { return path.slice(path.lastIndexOf("/") + 1) || path; }
  function nodeOf(e) {
    var b = builds[e.build];
    return data.per_target ? b.project + "/" + e.target : b.project;
  }
  function projectOfNode(node) {
    var known = Object.prototype.hasOwnProperty.bind(data.colours);
    if (known(node)) {
      return node;
    }
    var slash = node.lastIndexOf("/");
    return slash > 0 && known(node.slice(0, slash)) ? node.slice(0, slash) : null;
  }

  // ---- Small makers ---------------------------------------------------------

  function el(tag, attributes, children) {
    var element = document.createElement(tag);
    Object.keys(attributes || {}).forEach(function (key) { element.setAttribute(key, attributes[key]); });
    (children || []).forEach(function (child) {
      if (child !== null && child !== undefined) {
        element.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
      }
    });
    return element;
  }
  function text(value) { return document.createTextNode(value); }
  // A link that opens a panel: a real fragment, so it can be copied.
  function opener(kind, key, label, title) {
    var a = el("a", {"data-open": kind, "data-key": key}, [label]);
    a.setAttribute("href", "#" + kind + "=" + encodeKey(kind, key));
    if (title) {
      a.title = title;
    }
    return a;
  }
  function artifactLink(a) { return opener("artifact", a.digest, a.name, a.paths.join("\n")); }
  function buildLink(b, label) { return opener("build", b.key, label || b.project + " " + b.build); }
  function nodeLink(node) { return opener("node", node, node); }
  function chip(project) {
    var c = el("span", {"class": "chip"}, [project]);
    c.style.background = data.colours[project] || "#eeeeee";
    return c;
  }
  function badge(label, kind, title) {
    var b = el("span", {"class": "badge" + (kind ? " " + kind : "")}, [label]);
    if (title) {
      b.title = title;
    }
    return b;
  }
  function shortDigest(digest) { return digest.slice(0, digest.indexOf(":") + 13); }
  function size(bytes) {
    if (bytes < 1024) {
      return bytes + " B";
    }
    var units = ["KiB", "MiB", "GiB", "TiB"], value = bytes / 1024, unit = 0;
    while (value >= 1024 && unit + 1 < units.length) {
      value /= 1024;
      unit++;
    }
    return value.toFixed(1) + " " + units[unit];
  }

  // ---- Times: relative for reading, local with its offset on hover -----------

  var now = Date.now();
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function localTime(iso) {
    var d = new Date(iso);
    if (isNaN(d)) {
      return iso;
    }
    var offset = -d.getTimezoneOffset(), sign = offset < 0 ? "-" : "+";
    offset = Math.abs(offset);
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + pad(d.getHours()) + ":" +
      pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + " " + sign + pad(Math.floor(offset / 60)) + ":" + pad(offset % 60);
  }
  function relativeTime(iso) {
    var t = Date.parse(iso);
    if (isNaN(t)) {
      return iso;
    }
    var s = Math.round((now - t) / 1000), future = s < 0;
    s = Math.abs(s);
    var steps = [[60, "s", 1], [3600, "min", 60], [86400, "h", 3600], [86400 * 60, "days", 86400],
                 [86400 * 730, "months", 86400 * 30], [Infinity, "years", 86400 * 365]];
    for (var i = 0; i < steps.length; i++) {
      if (s < steps[i][0]) {
        var n = Math.floor(s / steps[i][2]);
        if (i === 0 && n < 10) {
          return "just now";
        }
        return future ? "in " + n + " " + steps[i][1] : n + " " + steps[i][1] + " ago";
      }
    }
  }
  function time(iso) { return el("time", {datetime: iso, title: localTime(iso) + " (" + iso + ")"}, [relativeTime(iso)]); }

  // ---- The address ------------------------------------------------------------

  var state = {q: "", toolchain: !!data.show_toolchain, open: null};
  function encodeKey(kind, key) {
    if (kind === "build" || kind === "edge") {
      var comma = kind === "build" ? key.indexOf(",") : key.indexOf("\u0000");
      return encodeURIComponent(key.slice(0, comma)) + "," + encodeURIComponent(key.slice(comma + 1));
    }
    return encodeURIComponent(key);
  }
  function decode(text) {
    try {
      return decodeURIComponent(text);
    } catch (e) {
      return text;
    }
  }
  function readHash() {
    var next = {q: "", toolchain: !!data.show_toolchain, open: null};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var eq = part.indexOf("=");
      if (eq < 0) {
        return;
      }
      var key = part.slice(0, eq), value = part.slice(eq + 1);
      if (key === "q") {
        next.q = decode(value);
      } else if (key === "toolchain") {
        next.toolchain = value === "1";
      } else if (key === "build" || key === "edge") {
        var halves = value.split(",").map(decode);
        next.open = {kind: key, key: halves[0] + (key === "build" ? "," : "\u0000") + (halves[1] || "")};
      } else if (key === "artifact" || key === "node") {
        next.open = {kind: key, key: decode(value)};
      }
    });
    return next;
  }
  function writeHash(push) {
    var parts = [];
    if (state.open) {
      parts.push(state.open.kind + "=" + encodeKey(state.open.kind, state.open.key));
    }
    if (state.q) {
      parts.push("q=" + encodeURIComponent(state.q));
    }
    if (state.toolchain !== !!data.show_toolchain) {
      parts.push("toolchain=" + (state.toolchain ? "1" : "0"));
    }
    var hash = parts.length ? "#" + parts.join("&") : location.pathname + location.search;
    history[push ? "pushState" : "replaceState"](null, "", hash);
  }

  // ---- Search -----------------------------------------------------------------

  function words(value) { return value.toLowerCase().split(/\s+/).filter(Boolean); }
  function matchesAll(haystack, list) {
    return list.every(function (word) { return haystack.indexOf(word) >= 0; });
  }
  function shownArtifact(i) { return state.toolchain || !artifacts[i].toolchain; }

  // ---- Tables -----------------------------------------------------------------
  // Each column: its heading, its cell, and the value it sorts and is
  // searched by.

  function eventBuild(e) { return builds[e.build]; }
  function signatureBadge(e) {
    var status = e.signature && e.signature.status;
    return status && status !== "unsigned"
      ? badge(status, status, e.signature.key ? "signed by key " + e.signature.key : "") : null;
  }
  function versionBadges(a) {
    var seen = [];
    a.paths.forEach(function (path) {
      byPath[path].forEach(function (other) {
        if (seen.indexOf(other) < 0) {
          seen.push(other);
        }
      });
    });
    if (seen.length < 2) {
      return null;
    }
    var newest = seen.reduce(function (n, o) { return o.time > n.time ? o : n; });
    return newest === a ? badge("newest of " + seen.length, "", "other bytes were seen at this path")
      : badge("older version", "old", "newer bytes were seen at this path");
  }
  function commitOf(b) {
    var source = b.provenance && b.provenance.source;
    return source && source.commit ? source.commit.slice(0, 12) + (source.dirty ? " dirty" : "") : "";
  }
  function compilersOf(b) {
    var compilers = (b.provenance && b.provenance.compilers) || {};
    return Object.keys(compilers).map(function (lang) {
      return lang + " " + (compilers[lang].id || "") + " " + (compilers[lang].version || "");
    }).join(", ");
  }
  var tables = [
    {id: "builds", caption: "Builds", rows: function () { return builds; }, columns: [
      {head: "Project", value: function (b) { return b.project; }, cell: function (b) { return chip(b.project); }},
      {head: "Build", value: function (b) { return b.build; }, cell: function (b) { return buildLink(b, b.build); }},
      {head: "Version", value: function (b) { return b.version; }},
      {head: "Time", value: function (b) { return b.time; }, cell: function (b) { return time(b.time); }},
      {head: "Host", value: function (b) { return b.host; }},
      {head: "Produced", num: true, value: function (b) { return b.produced.length; }},
      {head: "Consumed", num: true, value: function (b) {
        return b.consumed.filter(function (e) { return shownArtifact(e.artifact); }).length;
      }},
      {head: "Commit", value: commitOf},
      {head: "Compilers", value: compilersOf},
      {head: "Build type", value: function (b) { return (b.provenance && b.provenance.build_type) || ""; }}]},
    // An artifact the page knows only as what a shown file went into
    // (--project) has no events, and no row.
    {id: "artifacts", caption: "Artifacts", rows: function () {
      return artifacts.filter(function (a) { return byArtifact[a.index].length && shownArtifact(a.index); });
    },
     columns: [
      {head: "Name", value: function (a) { return a.name; }, cell: function (a) {
        return el("span", {}, [artifactLink(a), versionBadges(a), a.toolchain ? badge(origin[a.index] || "toolchain") : null]);
      }},
      {head: "Path", value: function (a) { return a.paths.join(" "); }},
      {head: "Digest", value: function (a) { return a.digest; }, cell: function (a) {
        return el("code", {title: a.digest, "class": "digest"}, [shortDigest(a.digest)]);
      }, search: function (a) { return a.digest; }},
      {head: "Size", num: true, value: function (a) { return a.size; }, cell: function (a) {
        return el("span", {title: a.size + " bytes"}, [size(a.size)]);
      }},
      {head: "Version", value: function (a) { return a.version; }},
      {head: "First seen", value: function (a) { return a.time; }, cell: function (a) { return time(a.time); }},
      {head: "Produced by", value: function (a) { return a.producers.map(nodeOf).join(", "); }},
      {head: "Consumed by", value: function (a) {
        return a.consumers.map(nodeOf).filter(function (n, i, all) { return all.indexOf(n) === i; }).join(", ");
      }}]},
    {id: "producers", caption: "Producers", rows: function () {
      return events.filter(function (e) { return e.kind !== "consumed" && shownArtifact(e.artifact); });
    }, columns: [
      {head: "Artifact", value: function (e) { return artifacts[e.artifact].name; }, cell: function (e) {
        return el("span", {}, [artifactLink(artifacts[e.artifact]), signatureBadge(e)]);
      }},
      {head: "Event", value: function (e) { return e.kind; }},
      {head: "Project", value: function (e) { return eventBuild(e).project; }},
      {head: "Target", value: function (e) { return e.target; }},
      {head: "Build", value: function (e) { return eventBuild(e).build; }, cell: function (e) {
        return buildLink(eventBuild(e), eventBuild(e).build);
      }},
      {head: "Version", value: function (e) { return eventBuild(e).version; }},
      {head: "Host", value: function (e) { return eventBuild(e).host; }},
      {head: "Time", value: function (e) { return e.time; }, cell: function (e) { return time(e.time); }}]},
    {id: "consumers", caption: "Consumers", rows: function () {
      return events.filter(function (e) { return e.kind === "consumed" && shownArtifact(e.artifact); });
    }, columns: [
      {head: "Artifact", value: function (e) { return artifacts[e.artifact].name; }, cell: function (e) {
        return artifactLink(artifacts[e.artifact]);
      }},
      {head: "Project", value: function (e) { return eventBuild(e).project; }},
      {head: "Target", value: function (e) { return e.target; }},
      {head: "Build", value: function (e) { return eventBuild(e).build; }, cell: function (e) {
        return buildLink(eventBuild(e), eventBuild(e).build);
      }},
      {head: "To produce", value: function (e) { return artifacts[e.product].name; }, cell: function (e) {
        return artifactLink(artifacts[e.product]);
      }},
      {head: "Role", value: function (e) { return e.role; }},
      {head: "Time", value: function (e) { return e.time; }, cell: function (e) { return time(e.time); }}]}
  ];

  var container = document.getElementById("tables");
  tables.forEach(function (table) {
    table.sort = null; // {column, direction}
    table.limit = PAGE;
    table.heading = el("h2", {}, [table.caption]);
    table.filter = el("input", {type: "search", "class": "filter", placeholder: "Filter " + table.caption.toLowerCase(),
                                "aria-label": "Filter " + table.caption.toLowerCase()});
    table.filter.addEventListener("input", function () { table.limit = PAGE; render(table); updateCount(); });
    table.head = el("tr", {}, table.columns.map(function (column, i) {
      var button = el("button", {type: "button", title: "Sort by " + column.head.toLowerCase()}, [column.head]);
      button.addEventListener("click", function () {
        var ascending = !(table.sort && table.sort.column === i && table.sort.ascending);
        table.sort = {column: i, ascending: ascending};
        render(table);
      });
      return el("th", {scope: "col", "class": column.num ? "num" : ""}, [button]);
    }));
    table.body = el("tbody");
    table.more = el("button", {type: "button", "class": "more", hidden: ""});
    table.more.addEventListener("click", function () { table.limit += PAGE; render(table); });
    container.appendChild(el("section", {}, [table.heading, table.filter,
      el("div", {"class": "scroll"}, [el("table", {id: table.id}, [el("thead", {}, [table.head]), table.body])]),
      table.more]));
  });

  // Search text per row, made once per row and kept.
  function searchText(table, row) {
    var cache = table.cache || (table.cache = new Map());
    var known = cache.get(row);
    if (known === undefined) {
      known = table.columns.map(function (column) { return String(column.value(row)); }).join(" ").toLowerCase();
      cache.set(row, known);
    }
    return known;
  }
  function matchingRows(table) {
    var wanted = words(state.q).concat(words(table.filter.value));
    var rows = table.rows().filter(function (row) { return matchesAll(searchText(table, row), wanted); });
    if (table.sort) {
      var column = table.columns[table.sort.column], sign = table.sort.ascending ? 1 : -1;
      rows = rows.map(function (row, i) { return {row: row, key: column.value(row), i: i}; });
      rows.sort(function (x, y) {
        var a = x.key, b = y.key;
        var order = typeof a === "number" ? a - b : String(a).localeCompare(String(b), undefined, {numeric: true});
        return order * sign || x.i - y.i;
      });
      rows = rows.map(function (x) { return x.row; });
    }
    return rows;
  }
  function render(table) {
    var rows = matchingRows(table);
    table.total = table.rows().length;
    table.shown = rows.length;
    table.heading.textContent = table.caption + " (" + (rows.length === table.total ? table.total : rows.length + " of " + table.total) + ")";
    Array.prototype.forEach.call(table.head.children, function (th, i) {
      if (table.sort && table.sort.column === i) {
        th.setAttribute("aria-sort", table.sort.ascending ? "ascending" : "descending");
      } else {
        th.removeAttribute("aria-sort");
      }
    });
    var body = el("tbody");
    rows.slice(0, table.limit).forEach(function (row) {
      body.appendChild(el("tr", {}, table.columns.map(function (column) {
        return el("td", {"class": column.num ? "num" : ""}, [column.cell ? column.cell(row) : String(column.value(row))]);
      })));
    });
    table.body.replaceWith(body);
    table.body = body;
    table.more.hidden = rows.length <= table.limit;
    table.more.textContent = "Show " + Math.min(PAGE, rows.length - table.limit) + " more of " + (rows.length - table.limit);
  }
  function updateCount() {
    var total = 0, shown = 0;
    tables.forEach(function (table) {
      total += table.total;
      shown += table.shown;
    });
    count.textContent = shown === total ? total + " rows" : shown + " of " + total + " rows";
  }

  // ---- The graph --------------------------------------------------------------

  var views = {main: {data: data}, toolchain: data.toolchain ? {data: data.toolchain} : null};
  Object.keys(views).forEach(function (name) {
    var view = views[name];
    if (!view) {
      return;
    }
    view.element = document.querySelector('.view[data-view="' + name + '"]');
    var svg = view.element && view.element.querySelector("svg");
    if (svg && svg.classList.contains("layout")) {
      draw(svg, view.data, name === "main" ? "g-" : "t-");
    }
    // dot and draw() both give node i the id <prefix>n<i>, edge i <prefix>e<i>.
    view.nodes = [];
    view.edges = [];
    if (view.element) {
      view.element.querySelectorAll("g.node").forEach(function (g) {
        var i = Number(g.id.replace(/^.-n/, ""));
        view.nodes.push({g: g, name: view.data.nodes[i]});
      });
      view.element.querySelectorAll("g.edge").forEach(function (g) {
        var i = Number(g.id.replace(/^.-e/, ""));
        view.edges.push({g: g, edge: view.data.edges[i]});
      });
    }
    view.nodes.forEach(function (n) {
      n.text = (n.name + " " + (view.data.versions[n.name] || "")).toLowerCase();
      n.g.addEventListener("click", function () { open({kind: "node", key: n.name}); });
    });
    view.edges.forEach(function (e) {
      e.text = [e.edge.from, e.edge.to].concat(e.edge.artifacts.map(function (i) {
        return artifacts[i].name + " " + artifacts[i].digest;
      })).join(" ").toLowerCase();
      e.g.addEventListener("click", function () { open({kind: "edge", key: e.edge.from + "\u0000" + e.edge.to}); });
    });
  });
  function currentView() { return state.toolchain && views.toolchain ? views.toolchain : views.main; }
  function highlight() {
    var wanted = words(state.q);
    var view = currentView();
    var openNode = state.open && state.open.kind === "node" ? state.open.key : null;
    var openEdge = state.open && state.open.kind === "edge" ? state.open.key : null;
    view.nodes.forEach(function (n) {
      var hit = wanted.length > 0 && matchesAll(n.text, wanted);
      n.g.classList.toggle("match", hit);
      n.g.classList.toggle("dim", wanted.length > 0 && !hit);
      n.g.classList.toggle("open", n.name === openNode);
    });
    view.edges.forEach(function (e) {
      var hit = wanted.length > 0 && matchesAll(e.text, wanted);
      e.g.classList.toggle("match", hit);
      e.g.classList.toggle("dim", wanted.length > 0 && !hit);
      e.g.classList.toggle("open", e.edge.from + "\u0000" + e.edge.to === openEdge);
    });
  }
  function legend() {
    var box = document.getElementById("legend");
    var seen = {};
    currentView().data.nodes.forEach(function (node) {
      var project = projectOfNode(node);
      if (project) {
        seen[project] = true;
      }
    });
    box.replaceChildren.apply(box, Object.keys(seen).sort().map(chip));
  }

  // Without Graphviz: longest-path layers from the sources, one column
  // each; the rank is capped at the number of nodes, so a cycle ends.
  function draw(svg, graph, prefix) {
    function make(name, attributes, parent) {
      var element = document.createElementNS(svg.namespaceURI, name);
      Object.keys(attributes).forEach(function (key) { element.setAttribute(key, attributes[key]); });
      parent.appendChild(element);
      return element;
    }
    var rank = {};
    graph.nodes.forEach(function (node) { rank[node] = 0; });
    for (var round = 0; round < graph.nodes.length; round++) {
      var changed = false;
      graph.edges.forEach(function (edge) {
        if (rank[edge.to] < rank[edge.from] + 1 && rank[edge.from] + 1 < graph.nodes.length) {
          rank[edge.to] = rank[edge.from] + 1;
          changed = true;
        }
      });
      if (!changed) {
        break;
      }
    }
    var columns = [];
    graph.nodes.forEach(function (node) { (columns[rank[node]] = columns[rank[node]] || []).push(node); });
    var boxes = {}, x = 10, bottom = 10, height = 38;
    columns.forEach(function (column) {
      var width = 24 + 7 * Math.max.apply(null, column.map(function (node) { return node.length; }));
      column.forEach(function (node, i) {
        boxes[node] = {x: x, y: 10 + i * (height + 18), w: width};
        bottom = Math.max(bottom, boxes[node].y + height + 10);
      });
      x += width + 60;
    });
    var marker = make("marker", {id: prefix + "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5,
                                 markerWidth: 8, markerHeight: 8, orient: "auto"}, make("defs", {}, svg));
    make("path", {d: "M0,0 L10,5 L0,10 z"}, marker);
    graph.edges.forEach(function (edge, i) {
      var a = boxes[edge.from], b = boxes[edge.to];
      var x1 = a.x + a.w, y1 = a.y + height / 2, x2 = b.x, y2 = b.y + height / 2;
      // An edge that skips a column (or goes back) bows below the boxes it would cross.
      var bend = rank[edge.to] - rank[edge.from] === 1 ? 0 : 48;
      bottom = Math.max(bottom, Math.max(y1, y2) + bend);
      var g = make("g", {"class": "edge", id: prefix + "e" + i}, svg);
      make("title", {}, g).textContent = edge.from + "->" + edge.to;
      var d = "M" + x1 + "," + y1 + " C" + (x1 + 40) + "," + (y1 + bend) + " " + (x2 - 40) + "," + (y2 + bend) + " " + x2 + "," + y2;
      make("path", {d: d, "marker-end": "url(#" + prefix + "arrow)"}, g);
      make("path", {d: d, "class": "hit"}, g);
    });
    graph.nodes.forEach(function (node, i) {
      var box = boxes[node];
      var g = make("g", {"class": "node", id: prefix + "n" + i}, svg);
      make("title", {}, g).textContent = node;
      var project = projectOfNode(node);
      make("rect", {x: box.x, y: box.y, width: box.w, height: height, rx: 6,
                    fill: project ? data.colours[project] : "#eeeeee", "stroke-dasharray": project ? "" : "4 3"}, g);
      make("text", {x: box.x + 12, y: box.y + 16}, g).textContent = node;
      make("text", {x: box.x + 12, y: box.y + 30, "class": "version"}, g).textContent = graph.versions[node] || "";
    });
    svg.setAttribute("width", x);
    svg.setAttribute("height", bottom);
    svg.setAttribute("viewBox", "0 0 " + x + " " + bottom);
  }

  // ---- Panels -----------------------------------------------------------------

  function list(items, make) {
    return items.length ? el("ul", {}, items.map(function (item) { return el("li", {}, make(item)); }))
      : el("p", {"class": "muted"}, ["none"]);
  }
  function facts(pairs) {
    var dl = el("dl");
    pairs.forEach(function (pair) {
      if (pair[1] !== null && pair[1] !== undefined && pair[1] !== "") {
        dl.appendChild(el("dt", {}, [pair[0]]));
        dl.appendChild(el("dd", {}, [typeof pair[1] === "string" ? pair[1] : pair[1]]));
      }
    });
    return dl;
  }
  function artifactPanel(a) {
    var versions = [];
    a.paths.forEach(function (path) {
      byPath[path].forEach(function (other) {
        if (versions.indexOf(other) < 0) {
          versions.push(other);
        }
      });
    });
    versions.sort(function (x, y) { return x.time < y.time ? -1 : x.time > y.time ? 1 : 0; });
    return [
      el("h2", {}, [a.name, a.toolchain ? badge("toolchain/system") : null]),
      facts([["Digest", el("code", {}, [a.digest])], ["Size", size(a.size) + " (" + a.size + " bytes)"],
             ["Version", a.version], ["First seen", time(a.time)],
             ["From", a.toolchain ? (origin[a.index] || "no fingerprinted build") : null]]),
      el("h3", {}, ["Names (" + a.paths.length + ")"]), list(a.paths, function (p) { return [el("code", {}, [p])]; }),
      el("h3", {}, ["Produced by (" + a.producers.length + ")"]),
      list(a.producers, function (e) {
        return [buildLink(builds[e.build]), " " + e.kind + " by target " + e.target + ", ", time(e.time),
                signatureBadge(e) || (e.signature ? badge("unsigned") : null),
                e.from !== undefined ? el("span", {}, [" from ", artifactLink(artifacts[e.from])]) : null];
      }),
      el("h3", {}, ["Consumed by (" + a.consumers.length + ")"]),
      list(a.consumers, function (e) {
        return [buildLink(builds[e.build]), " target " + e.target + " (" + e.role + ") to produce ",
                artifactLink(artifacts[e.product]), ", ", time(e.time)];
      }),
      el("h3", {}, ["Versions seen at its paths (" + versions.length + ")"]),
      list(versions, function (v) {
        return [v === a ? el("strong", {}, [shortDigest(v.digest)]) : opener("artifact", v.digest, shortDigest(v.digest)),
                v.version ? " version " + v.version : "", ", first seen ", time(v.time),
                v === a ? " (this one)" : "", v === versions[versions.length - 1] ? badge("newest") : null];
      })
    ];
  }
  function provenanceFacts(p) {
    if (!p) {
      return [el("p", {"class": "muted"}, ["No provenance recorded for this build."])];
    }
    var source = p.source || null, cmake = p.cmake || {};
    return [facts([
      ["Source", source ? el("span", {}, [el("code", {}, [source.commit || ""]), source.branch ? " on " + source.branch : "",
                                          source.dirty ? badge("dirty", "invalid") : " clean"]) : "not a git work tree"],
      ["Remote", source && source.remote],
      ["CMake", cmake.version ? cmake.version + (cmake.generator ? " (" + cmake.generator + ")" : "") : ""],
      ["Compilers", compilersFull(p)], ["Build type", p.build_type], ["Flags", p.flags_digest],
      ["CI run", p.ci && p.ci.url], ["Source dir", p.source_dir]])];
  }
  function compilersFull(p) {
    var compilers = p.compilers || {};
    return Object.keys(compilers).map(function (lang) {
      var c = compilers[lang];
      return lang + " " + (c.id || "") + " " + (c.version || "") + (c.path ? " " + c.path : "");
    }).join("; ");
  }
  function buildPanel(b) {
    var consumed = b.consumed.filter(function (e) { return shownArtifact(e.artifact); });
    return [
      el("h2", {}, [chip(b.project), " build " + b.build]),
      facts([["Project", nodeLink(b.project)], ["Version", b.version], ["Time", time(b.time)], ["Host", b.host],
             ["Build tree", el("code", {}, [b.build_dir])]]),
      el("h3", {}, ["Provenance"])].concat(provenanceFacts(b.provenance), [
      el("h3", {}, ["Produced (" + b.produced.length + ")"]),
      list(b.produced, function (e) { return [artifactLink(artifacts[e.artifact]), " (" + e.target + ")", signatureBadge(e)]; }),
      el("h3", {}, ["Consumed (" + consumed.length + (consumed.length < b.consumed.length ? " of " + b.consumed.length : "") + ")"]),
      list(consumed, function (e) {
        return [artifactLink(artifacts[e.artifact]), " (" + e.role + ", by " + e.target + ")"];
      })]);
  }
  function nodePanel(node) {
    var view = currentView().data;
    var into = view.edges.filter(function (e) { return e.to === node; });
    var out = view.edges.filter(function (e) { return e.from === node; });
    var project = projectOfNode(node);
    var own = builds.filter(function (b) {
      return project && b.project === project && (!data.per_target || b.produced.some(function (e) { return nodeOf(e) === node; }));
    });
    function edgeItem(e, other) {
      return [opener("edge", e.from + "\u0000" + e.to, other), " (" + e.artifacts.length + " files)"];
    }
    var files = [];
    if (!project) {
      into = [];
      files = artifacts.filter(function (a) { return origin[a.index] === node; });
    }
    return [
      el("h2", {}, [project ? chip(node) : node]),
      facts([["Newest version", view.versions[node]], ["Kind", project ? (data.per_target ? "target" : "project")
                                                                 : "not built here: a Debian package, or no known origin"]]),
      project ? el("h3", {}, ["Builds (" + own.length + ")"]) : null,
      project ? list(own, function (b) { return [buildLink(b), " ", b.version ? "version " + b.version + ", " : "", time(b.time)]; }) : null,
      project ? el("h3", {}, ["Reads from (" + into.length + ")"]) : el("h3", {}, ["Files (" + files.length + ")"]),
      project ? list(into, function (e) { return edgeItem(e, e.from); }) : list(files, function (a) { return [artifactLink(a)]; }),
      el("h3", {}, ["Read by (" + out.length + ")"]), list(out, function (e) { return edgeItem(e, e.to); })];
  }
  function edgePanel(key) {
    var halves = key.split("\u0000");
    var edge = currentView().data.edges.filter(function (e) { return e.from === halves[0] && e.to === halves[1]; })[0];
    if (!edge) {
      return null;
    }
    return [el("h2", {}, [nodeLink(edge.from), " \u2192 ", nodeLink(edge.to)]),
            el("p", {"class": "muted"}, ["What " + edge.to + " read of what " + edge.from + " made:"]),
            el("h3", {}, ["Artifacts (" + edge.artifacts.length + ")"]),
            list(edge.artifacts, function (i) {
              var a = artifacts[i];
              return [artifactLink(a), a.version ? " version " + a.version : "", " ", el("code", {}, [shortDigest(a.digest)]), versionBadges(a)];
            })];
  }
  function showPanel() {
    var o = state.open, content = null;
    if (o && o.kind === "artifact" && artifactByDigest[o.key]) {
      content = artifactPanel(artifactByDigest[o.key]);
    } else if (o && o.kind === "build" && buildByKey[o.key]) {
      content = buildPanel(buildByKey[o.key]);
    } else if (o && o.kind === "node" && currentView().data.nodes.indexOf(o.key) >= 0) {
      content = nodePanel(o.key);
    } else if (o && o.kind === "edge") {
      content = edgePanel(o.key);
    }
    panel.hidden = !content;
    panel.dataset.kind = content ? o.kind : "";
    panelBody.replaceChildren.apply(panelBody, (content || []).filter(Boolean));
    if (content) {
      panel.scrollTop = 0;
    }
  }
  function open(what) {
    state.open = what;
    writeHash(true);
    showPanel();
    highlight();
  }

  // ---- Putting it together ------------------------------------------------------

  function showView() {
    Object.keys(views).forEach(function (name) {
      if (views[name] && views[name].element) {
        views[name].element.hidden = views[name] !== currentView();
      }
    });
    var note = document.getElementById("toolchain-note");
    if (note) {
      note.hidden = state.toolchain;
    }
    toggle.checked = state.toolchain;
    legend();
  }
  function refresh() {
    tables.forEach(function (table) {
      table.limit = PAGE;
      render(table);
    });
    updateCount();
    highlight();
  }
  function apply(next) {
    var toolchainChanged = next.toolchain !== state.toolchain;
    var searchChanged = next.q !== state.q;
    state = next;
    q.value = state.q;
    if (toolchainChanged) {
      showView();
    }
    if (toolchainChanged || searchChanged) {
      refresh();
    }
    showPanel();
    highlight();
  }

  var typing = null;
  q.addEventListener("input", function () {
    clearTimeout(typing);
    // A store's worth of rows is searched at most every 120 ms while typing.
    typing = setTimeout(function () {
      state.q = q.value;
      writeHash(false);
      refresh();
    }, artifacts.length > 2000 ? 120 : 0);
  });
  toggle.addEventListener("change", function () {
    state.toolchain = toggle.checked;
    writeHash(false);
    showView();
    refresh();
    showPanel();
  });
  document.addEventListener("click", function (event) {
    var a = event.target.closest && event.target.closest("a[data-open]");
    if (a && !event.ctrlKey && !event.metaKey && !event.shiftKey) {
      event.preventDefault();
      open({kind: a.dataset.open, key: a.dataset.key});
    }
  });
  document.getElementById("close").addEventListener("click", function () { open(null); });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && state.open) {
      open(null);
    }
  });
  addEventListener("hashchange", function () { apply(readHash()); });
  addEventListener("popstate", function () { apply(readHash()); });

  var projects = Object.keys(data.colours).length;
  document.getElementById("summary").textContent = projects + (projects === 1 ? " project" : " projects") + " \u00b7 " +
    builds.length + (builds.length === 1 ? " build" : " builds") + " \u00b7 " +
    artifacts.filter(function (a) { return !a.toolchain; }).length + " artifacts";
  state = readHash();
  q.value = state.q;
  showView();
  refresh();
  showPanel();
  highlight();
  performance.mark("interactive");
  document.body.dataset.ready = "1";
})();
