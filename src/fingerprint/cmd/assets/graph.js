(function () {
  "use strict";
  var q = document.getElementById("q");
  var count = document.getElementById("count");
  var rows = Array.prototype.slice.call(document.querySelectorAll("tbody tr"));
  var data = JSON.parse(document.getElementById("graph-data").textContent);
  var layout = document.getElementById("layout");
  if (layout) {
    draw(layout, data);
  }
  var nodes = Array.prototype.slice.call(document.querySelectorAll("#graph g.node"));

  function title(g) {
    var t = g.querySelector("title");
    return t ? t.textContent : "";
  }
  function filter() {
    var words = q.value.toLowerCase().split(/\s+/).filter(Boolean);
    function matches(text) {
      text = text.toLowerCase();
      return words.every(function (word) { return text.indexOf(word) >= 0; });
    }
    var shown = 0;
    rows.forEach(function (row) {
      row.hidden = !matches(row.textContent);
      shown += row.hidden ? 0 : 1;
    });
    nodes.forEach(function (g) { g.classList.toggle("dim", words.length > 0 && !matches(title(g))); });
    count.textContent = words.length ? shown + " of " + rows.length + " rows" : rows.length + " rows";
  }

  // Longest-path layers from the sources, one column each; the rank is
  // capped at the number of nodes, so a cycle ends.
  function draw(svg, graph) {
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
    var boxes = {}, x = 10, bottom = 10, height = 28;
    columns.forEach(function (column) {
      var width = 24 + 7.5 * Math.max.apply(null, column.map(function (node) { return node.length; }));
      column.forEach(function (node, i) {
        boxes[node] = {x: x, y: 10 + i * (height + 16), w: width};
        bottom = Math.max(bottom, boxes[node].y + height + 10);
      });
      x += width + 60;
    });
    var marker = make("marker", {id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5,
                                 markerWidth: 8, markerHeight: 8, orient: "auto"}, make("defs", {}, svg));
    make("path", {d: "M0,0 L10,5 L0,10 z"}, marker);
    graph.edges.forEach(function (edge) {
      var a = boxes[edge.from], b = boxes[edge.to];
      var x1 = a.x + a.w, y1 = a.y + height / 2, x2 = b.x, y2 = b.y + height / 2;
      // An edge that skips a column (or goes back) bows below the boxes it would cross.
      var bend = rank[edge.to] - rank[edge.from] === 1 ? 0 : 48;
      bottom = Math.max(bottom, Math.max(y1, y2) + bend);
      var g = make("g", {"class": "edge"}, svg);
      make("title", {}, g).textContent = edge.from + " -> " + edge.to + ": " + edge.artifacts.join(", ");
      make("path", {d: "M" + x1 + "," + y1 + " C" + (x1 + 40) + "," + (y1 + bend) + " " + (x2 - 40) + "," + (y2 + bend) + " " + x2 + "," + y2,
                    "marker-end": "url(#arrow)"}, g);
    });
    graph.nodes.forEach(function (node) {
      var box = boxes[node];
      var g = make("g", {"class": "node"}, svg);
      make("title", {}, g).textContent = node;
      make("rect", {x: box.x, y: box.y, width: box.w, height: height, rx: 4}, g);
      make("text", {x: box.x + 12, y: box.y + 18}, g).textContent = node;
    });
    svg.setAttribute("width", x);
    svg.setAttribute("height", bottom);
  }

  q.addEventListener("input", filter);
  nodes.forEach(function (g) {
    g.addEventListener("click", function () { q.value = title(g); filter(); });
  });
  var fragment = /^#q=(.*)$/.exec(location.hash);
  if (fragment) {
    try {
      q.value = decodeURIComponent(fragment[1]);
    } catch (e) {
      q.value = fragment[1];
    }
  }
  filter();
  document.body.dataset.ready = "1";
})();
