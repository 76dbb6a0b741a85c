// The viewer's one script: keeps a page of a running run up to date over server-sent events,
// and sizes the report's frame to its content. No framework, no build step, nothing fetched
// from anywhere but this server.
"use strict";

function sizeFrames() {
  for (const frame of document.querySelectorAll("iframe.report")) {
    const fit = () => {
      const doc = frame.contentDocument;
      if (doc && doc.body) frame.style.height = doc.documentElement.scrollHeight + 24 + "px";
    };
    frame.addEventListener("load", fit);
    if (frame.contentDocument && frame.contentDocument.readyState === "complete") fit();
  }
}

async function refresh() {
  const reply = await fetch(location.href, { headers: { Accept: "text/html" } });
  if (!reply.ok) return;
  const fresh = new DOMParser().parseFromString(await reply.text(), "text/html");
  const incoming = fresh.getElementById("live-body");
  const current = document.getElementById("live-body");
  if (incoming && current) current.replaceWith(incoming);
  for (const frame of document.querySelectorAll("iframe[data-reload]")) {
    frame.contentWindow.location.reload();
  }
  document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
}

function listen() {
  const live = document.querySelector("[data-live]");
  if (!live || !window.EventSource) return;
  const source = new EventSource(live.dataset.live);
  let pending = Promise.resolve();
  const update = () => { pending = pending.then(refresh).catch(() => {}); };
  source.addEventListener("status", () => { document.body.dataset.live = "listening"; });
  source.addEventListener("update", update);
  source.addEventListener("done", () => {
    source.close();
    update();
    document.body.dataset.live = "done";
  });
  document.body.dataset.live = "connecting";
}

document.addEventListener("DOMContentLoaded", () => { sizeFrames(); listen(); });
