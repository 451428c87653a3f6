// Node baselines for benchmarks/scrape_quality.py: Mozilla Readability and Defuddle on jsdom.
//
//   NODE_PATH=/path/to/node_modules node benchmarks/node_worker.js mozilla-readability defuddle < jobs.jsonl
//
// Needs `npm install @mozilla/readability defuddle jsdom` somewhere (NODE_PATH points there).
// Job and answer lines are those of scrape_baselines.py. Scripts on the page never run (jsdom's
// default), jsdom is given no resource loader, and fetch refuses: nothing is fetched.
"use strict";
const fs = require("fs");
const path = require("path");
const url_ = require("url");
const zlib = require("zlib");
const readline = require("readline");
const { JSDOM, VirtualConsole } = require("jsdom");

const quiet = new VirtualConsole();

// No baseline may reach the network: Defuddle's async extractors fetch (a Reddit page's comments
// from reddit.com), so fetch refuses here as the Python worker's sockets do.
globalThis.fetch = async () => {
  throw new Error("network access is disabled in the benchmark worker");
};

function textOf(html) {
  if (!html) return "";
  const dom = new JSDOM(`<body>${html}</body>`, { virtualConsole: quiet });
  return closing(dom, () => {
    const body = dom.window.document.body;
    // innerText is not implemented by jsdom: put block boundaries in by hand.
    for (const el of body.querySelectorAll("p,div,li,h1,h2,h3,h4,h5,h6,tr,br,pre,blockquote,section,article,table,dd,dt")) {
      el.insertAdjacentText("beforebegin", "\n");
      el.insertAdjacentText("afterend", "\n");
    }
    for (const el of body.querySelectorAll("td,th")) el.insertAdjacentText("afterend", " ");
    return body.textContent.replace(/[ \t]+/g, " ").replace(/\n\s*\n+/g, "\n\n").trim();
  });
}

// A window left open keeps its document alive (the worker's memory grew page after page); close
// each one when its answer is read. The driver also replaces the worker every 100 pages.
async function closing(dom, use) {
  try {
    return await use();
  } finally {
    dom.window.close();
  }
}

const systems = {
  "mozilla-readability": async (html, url) => {
    const { Readability } = require("@mozilla/readability");
    const dom = new JSDOM(html, { url: url || "http://localhost/", virtualConsole: quiet });
    return closing(dom, () => {
      const article = new Readability(dom.window.document).parse();
      return article ? textOf(article.content) : "";
    });
  },
  defuddle: async (html, url) => {
    // An ES module only, and ES imports ignore NODE_PATH: import it by file.
    const dir = path.join(path.dirname(require.resolve("defuddle")), "..");
    const { Defuddle } = await import(url_.pathToFileURL(path.join(dir, "dist", "node.js")).href);
    const dom = new JSDOM(html, { url: url || "http://localhost/", virtualConsole: quiet });
    return closing(dom, async () => {
      const result = await Defuddle(dom, url || "http://localhost/");
      return result && result.content ? textOf(result.content) : "";
    });
  },
};

function readHtml(path) {
  const raw = fs.readFileSync(path);
  return (path.endsWith(".gz") ? zlib.gunzipSync(raw) : raw).toString("utf8");
}

function withTimeout(promise, ms) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timeout after ${ms / 1000} s`)), ms); }),
  ]).finally(() => clearTimeout(timer));
}

async function main() {
  const names = process.argv.slice(2);
  for (const n of names) if (!systems[n]) throw new Error(`unknown system ${n}`);
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line.trim()) continue;
    const job = JSON.parse(line);
    const html = readHtml(job.path);
    for (const name of names) {
      const answer = { id: job.id, system: name };
      const started = process.hrtime.bigint();
      try {
        answer.text = await withTimeout(systems[name](html, job.url), 30000);
        answer.ms = Number(process.hrtime.bigint() - started) / 1e6;
      } catch (err) {
        answer.error = String(err && err.message ? err.message : err).slice(0, 200);
      }
      process.stdout.write(JSON.stringify(answer) + "\n");
    }
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
