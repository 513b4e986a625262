// The page `fingerprint graph --format html` writes, used in a real
// browser: Debian's Chromium, headless, driven by playwright-core.
//
//   node report.js PAGE.html SHOTS-DIR FACTS.json
//
// FACTS names what the store behind the page holds (report_browser.sh
// records it). Prints "ok: ..." or "FAIL: ..." per check and the paths of
// the screenshots; exits 1 when a check failed, or on any console error or
// uncaught exception in the page.
"use strict";
const fs = require("fs");
const path = require("path");

const modules = process.env.FINGERPRINT_NODE_MODULES;
let chromium;
try {
  ({chromium} = require(path.join(modules, "playwright-core")));
} catch (e) {
  console.error(`FAIL: no playwright-core in ${modules}: install it with tools/test.sh, or ` +
                "cd tests/validate && npm ci (then set FINGERPRINT_NODE_MODULES to its node_modules)");
  process.exit(1);
}
const [pagePath, shots, factsPath] = process.argv.slice(2);
const facts = JSON.parse(fs.readFileSync(factsPath, "utf8"));
const url = "file://" + pagePath;
let failures = 0;
function check(good, what, detail) {
  if (good) {
    console.log("ok: " + what);
  } else {
    failures++;
    console.log("FAIL: " + what + (detail === undefined ? "" : ": " + JSON.stringify(detail)));
  }
}

// Where an SVG element is on the screen, by its centre (a path's: its
// middle point), so that the click is a real one at those coordinates.
function centreOf(page, selector, title) {
  return page.evaluate(([selector, title]) => {
    const g = [...document.querySelectorAll(selector)].find(g => g.querySelector("title").textContent === title);
    if (!g) {
      return null;
    }
    const p = g.querySelector("path");
    if (g.classList.contains("edge") && p) {
      const point = p.getPointAtLength(p.getTotalLength() / 2);
      const m = p.getScreenCTM();
      return {x: m.a * point.x + m.c * point.y + m.e, y: m.b * point.x + m.d * point.y + m.f};
    }
    const r = g.getBoundingClientRect();
    return {x: r.x + r.width / 2, y: r.y + r.height / 2};
  }, [selector, title]);
}
const visibleView = "#graph .view:not([hidden])";
async function clickSvg(page, kind, title) {
  await page.evaluate(() => document.querySelector("#graph .view:not([hidden]) svg").scrollIntoView({block: "center"}));
  const at = await centreOf(page, `${visibleView} g.${kind}`, title);
  // What is at that point is the element itself, not the sticky header.
  const hit = at && await page.evaluate(([x, y]) => {
    const g = document.elementFromPoint(x, y);
    return g && g.closest("g.node, g.edge") ? g.closest("g.node, g.edge").querySelector("title").textContent : null;
  }, [at.x, at.y]);
  check(hit === title, `the graph's ${kind} ${title} is where a click lands`, hit);
  if (at) {
    await page.mouse.click(at.x, at.y);
  }
}
async function panel(page) {
  return page.evaluate(() => {
    const p = document.getElementById("panel");
    const r = p.getBoundingClientRect();
    return {hidden: p.hidden, kind: p.dataset.kind, text: p.innerText, hash: decodeURIComponent(location.hash),
            left: r.left, right: r.right, width: r.width, innerWidth: innerWidth};
  });
}
// Every key element drawn, inside the viewport's width; nothing wider than it.
async function layout(page, what) {
  const boxes = await page.evaluate(() => {
    const box = e => {
      if (!e) {
        return null;
      }
      const r = e.getBoundingClientRect();
      return {w: r.width, h: r.height, left: r.left, right: r.right};
    };
    return {
      title: box(document.querySelector("h1")), search: box(document.getElementById("q")),
      toggle: box(document.getElementById("toolchain")), graph: box(document.querySelector("#graph .view:not([hidden]) svg")),
      // A table wider than the window scrolls inside its own box.
      artifacts: box(document.getElementById("artifacts").closest(".scroll")),
      builds: box(document.getElementById("builds").closest(".scroll")),
      scrollWidth: document.documentElement.scrollWidth, innerWidth: innerWidth
    };
  });
  for (const key of ["title", "search", "toggle", "graph", "artifacts", "builds"]) {
    const b = boxes[key];
    check(b && b.w > 0 && b.h > 0 && b.left >= 0 && b.right <= boxes.innerWidth + 0.5,
          `${what}: the ${key} is drawn inside the viewport`, b);
  }
  check(boxes.scrollWidth <= boxes.innerWidth, `${what}: nothing overflows horizontally`,
        [boxes.scrollWidth, boxes.innerWidth]);
}
const taken = [];
async function shot(page, name) {
  const file = path.join(shots, name + ".png");
  // A viewport's shot: fullPage waits on a frame Debian's Chromium 156 in
  // headless mode never gives playwright-core.
  await page.screenshot({path: file});
  taken.push(file);
}
async function rows(page, table) {
  return page.evaluate(table => [...document.querySelectorAll(`#${table} tbody tr`)].map(r =>
    [...r.cells].map(c => c.innerText.trim())), table);
}

(async () => {
  let browser;
  try {
    browser = await chromium.launch({executablePath: "/usr/bin/chromium", args: ["--no-sandbox"]});
  } catch (e) {
    console.log("FAIL: cannot start /usr/bin/chromium (apt-get install chromium): " + e.message.split("\n")[0]);
    process.exit(1);
  }
  const page = await browser.newPage({viewport: {width: 1280, height: 800}});
  const problems = [];
  page.on("console", m => {
    if (m.type() === "error" || m.type() === "warning") {
      problems.push(m.type() + ": " + m.text());
    }
  });
  page.on("pageerror", e => problems.push("uncaught: " + e.message));
  page.on("request", r => {
    if (!r.url().startsWith("file://")) {
      problems.push("request: " + r.url());
    }
  });
  try {
    await page.goto(url);
    await page.waitForSelector("body[data-ready]");

    // ---- The overview --------------------------------------------------------
    await layout(page, "1280 px wide");
    const nodes = await page.evaluate(sel => [...document.querySelectorAll(sel + " g.node")].map(g => ({
      title: g.querySelector("title").textContent, text: g.textContent,
      fill: (g.querySelector("path, polygon, rect") || {getAttribute: () => null}).getAttribute("fill")})), visibleView);
    const names = nodes.map(n => n.title).sort();
    check(JSON.stringify(names) === JSON.stringify(facts.projects), "the overview draws the projects only", names);
    const core = nodes.find(n => n.title === "core") || {};
    check(core.text && core.text.includes("1.1 (+1 older)"), "the library's node says its newest version and that there was another", core.text);
    const colours = await page.evaluate(() => JSON.parse(document.getElementById("graph-data").textContent).colours);
    check(nodes.every(n => n.fill && n.fill === colours[n.title]), "each node has its project's colour", nodes);
    check(new Set(nodes.map(n => n.fill)).size === nodes.length, "and no two projects share one");
    const legend = await page.evaluate(() => [...document.querySelectorAll("#legend .chip")].map(c => c.textContent));
    check(JSON.stringify(legend) === JSON.stringify(facts.projects), "a legend names the projects' colours", legend);
    const time = await page.evaluate(() => {
      const t = document.querySelector("#builds time");
      return t && {text: t.textContent, title: t.title};
    });
    check(time && /(ago|just now)$/.test(time.text) && /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d /.test(time.title),
          "times read '3 min ago', the local time with its offset on hover", time);
    await shot(page, "overview");

    // ---- A node, an edge, a table row, a build -------------------------------
    await clickSvg(page, "node", "core");
    let p = await panel(page);
    check(!p.hidden && p.kind === "node" && p.hash === "#node=core", "a click on a node opens its panel, named in the address", p.hash);
    check(p.text.includes("core 1") && p.text.includes("core 2") && p.text.includes("apps"),
          "the node's panel lists its builds and who reads from it", p.text);
    check(p.left >= 0 && p.right <= p.innerWidth + 0.5 && p.width > 200, "the panel is on screen", p);
    await shot(page, "node-panel");

    await clickSvg(page, "edge", "core->apps");
    p = await panel(page);
    check(!p.hidden && p.kind === "edge" && p.hash === "#edge=core,apps", "a click on an edge opens its panel", p.hash);
    check(p.text.includes("lib.so") && p.text.includes("version 1.1") && !p.text.includes("version 1.0"),
          "the edge's panel names what it passed: the newer lib.so", p.text);
    const hovered = await page.evaluate(sel => {
      const g = [...document.querySelectorAll(sel + " g.edge")].find(g => g.querySelector("title").textContent === "core->apps");
      return g && g.matches(":hover") && getComputedStyle(g.querySelector("path")).strokeWidth;
    }, visibleView);
    check(hovered === "2.5px", "the edge under the pointer is drawn wider", hovered);

    const older = await page.evaluate(() => {
      const row = [...document.querySelectorAll("#artifacts tbody tr")].find(r => r.innerText.includes("older version"));
      return row && row.querySelector("a[data-open=artifact]").dataset.key;
    });
    check(older === facts.old_lib, "the artifact table marks the older lib.so", older);
    await page.click(`#artifacts a[data-key="${facts.old_lib}"]`);
    p = await panel(page);
    check(!p.hidden && p.kind === "artifact" && p.hash === "#artifact=" + facts.old_lib,
          "a click on a table row's artifact opens its panel", p.hash);
    check(p.text.includes(facts.old_lib) && p.text.includes("Versions seen at its paths (2)") && p.text.includes("version 1.0"),
          "the artifact's panel has its digest and both versions seen at its path", p.text);
    check(p.text.includes("unsigned"), "and its producer's signature status (this one unsigned)", p.text);
    await shot(page, "artifact-panel");

    await page.click(`#panel a[data-open=build][data-key="core,2"]`).catch(() => {});
    p = await panel(page);
    if (p.kind !== "build") {
      // The older version's panel names build 1; open the newer from the table.
      await page.click(`#builds a[data-key="core,2"]`);
      p = await panel(page);
    }
    check(!p.hidden && p.kind === "build" && p.hash === "#build=core,2", "a build's link opens its panel", p.hash);
    check(p.text.includes(facts.commit) && p.text.includes("RelWithDebInfo") && p.text.includes("GNU 12.2.0"),
          "the build's panel has its provenance: commit, build type, compilers", p.text);
    check(p.text.includes("lib.so") && p.text.includes("untrusted"),
          "and what it produced, signed by a key not trusted here", p.text);

    // The address reopens what was open.
    await page.goto("about:blank");
    await page.goto(url + "#build=core,2&q=core");
    await page.waitForSelector("body[data-ready]");
    p = await panel(page);
    check(!p.hidden && p.kind === "build" && p.text.includes(facts.commit), "a shared address reopens the build's panel", p);
    check(await page.inputValue("#q") === "core", "and the search in it");
    await page.keyboard.press("Escape");
    p = await panel(page);
    check(p.hidden && !p.hash.includes("build="), "Escape closes the panel, and the address says so", p.hash);

    // ---- Search --------------------------------------------------------------
    await page.fill("#q", "lib.so");
    await page.waitForFunction(() => document.querySelectorAll("#graph .view:not([hidden]) g.edge.match").length > 0);
    const marks = await page.evaluate(sel => ({
      edges: [...document.querySelectorAll(sel + " g.edge.match title")].map(t => t.textContent).sort(),
      dimmed: [...document.querySelectorAll(sel + " g.node.dim title")].map(t => t.textContent).sort(),
      hash: decodeURIComponent(location.hash)}), visibleView);
    check(JSON.stringify(marks.edges) === JSON.stringify(["core->apps", "core->dist"]),
          "searching a file marks the edges that pass it", marks.edges);
    check(marks.dimmed.length === facts.projects.length && marks.hash === "#q=lib.so",
          "dims the nodes it is not, and is in the address", marks);
    const found = (await rows(page, "artifacts")).map(r => r[0]);
    check(found.length === 2 && found.every(n => n.startsWith("lib.so")), "and keeps the rows that match", found);
    await page.fill("#q", "core");
    await page.waitForFunction(() => location.hash === "#q=core");
    const matched = await page.evaluate(sel => [...document.querySelectorAll(sel + " g.node.match title")].map(t => t.textContent), visibleView);
    check(JSON.stringify(matched) === JSON.stringify(["core"]), "searching a project marks its node", matched);
    await shot(page, "search");
    await page.fill("#q", "");
    await page.waitForFunction(() => location.hash === "");

    // ---- Sorting -------------------------------------------------------------
    const sizeColumn = 3;
    await page.click("#artifacts th:nth-child(4) button");
    let sizes = (await rows(page, "artifacts")).map(r => r[sizeColumn]);
    const bytes = s => parseFloat(s) * (s.includes("KiB") ? 1024 : 1);
    const ascending = sizes.every((s, i) => i === 0 || bytes(sizes[i - 1]) <= bytes(s));
    const sort = await page.getAttribute("#artifacts th:nth-child(4)", "aria-sort");
    check(ascending && sort === "ascending", "a click on a heading sorts by it, smallest first", [sizes, sort]);
    await page.click("#artifacts th:nth-child(4) button");
    sizes = (await rows(page, "artifacts")).map(r => r[sizeColumn]);
    check(sizes.every((s, i) => i === 0 || bytes(sizes[i - 1]) >= bytes(s)) && bytes(sizes[0]) > bytes(sizes[sizes.length - 1]),
          "a second click, largest first", sizes);
    await page.fill("section:has(#artifacts) .filter", "bundle");
    const filtered = (await rows(page, "artifacts")).map(r => r[0]);
    check(JSON.stringify(filtered) === JSON.stringify(["bundle.tar"]), "a table's own filter keeps its matching rows", filtered);
    await page.fill("section:has(#artifacts) .filter", "");

    // ---- The toolchain's files -------------------------------------------------
    const before = (await rows(page, "artifacts")).map(r => r[0]);
    check(!before.some(n => n.startsWith("libc.so.6")), "libc is not among the artifacts by default", before);
    await page.click("#toolchain");
    const after = await page.evaluate(sel => ({
      nodes: [...document.querySelectorAll(sel + " g.node title")].map(t => t.textContent),
      hash: location.hash}), visibleView);
    const libcNode = after.nodes.find(n => n.startsWith("libc6 ") && n.endsWith(" (Debian)"));
    check(libcNode !== undefined && after.hash === "#toolchain=1",
          "the toggle draws the toolchain's files from their Debian package's node", after);
    const libcRow = (await rows(page, "artifacts")).find(r => r[0].startsWith("libc.so.6"));
    check(libcRow && libcRow[0].includes(libcNode), "and lists them, with their package", libcRow);
    if (libcNode) {
      await clickSvg(page, "node", libcNode);
      p = await panel(page);
      check(!p.hidden && p.kind === "node" && p.text.includes("libc.so.6"), "the package's panel lists its files", p.text);
    }
    await layout(page, "1280 px wide, toolchain shown");
    await shot(page, "toolchain");

    // ---- A narrow window ----------------------------------------------------------
    await page.setViewportSize({width: 420, height: 800});
    await page.goto(url + "#artifact=" + facts.old_lib);
    await page.waitForSelector("body[data-ready]");
    await layout(page, "420 px wide");
    p = await panel(page);
    check(!p.hidden && p.left >= 0 && p.right <= p.innerWidth + 0.5, "the panel fits a narrow window", p);
    await shot(page, "narrow");
  } catch (e) {
    check(false, "the page could be driven to the end", e.message);
  }
  check(problems.length === 0, "no console error or warning, no uncaught exception, no request", problems);
  await browser.close();
  console.log("screenshots:\n  " + taken.join("\n  "));
  process.exit(failures ? 1 : 0);
})();
