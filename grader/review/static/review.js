// The grading page: every change is sent at once; keys for everything a grader does often.
"use strict";
(function () {
  const body = document.body;
  if (body.dataset.page !== "grade") return;
  // Every address comes from the page (the server's url_for): this submission by its id, never a place in a list.
  const token = body.dataset.token, urls = body.dataset;
  const $ = (id) => document.getElementById(id);
  let state = null;

  function go(url) { window.location.href = url; }

  async function call(method, path, data) {
    const resp = await fetch(path, {
      method, headers: {"X-Review-Token": token, "Content-Type": "application/json"},
      body: data === undefined ? undefined : JSON.stringify(data),
    });
    if (!resp.ok) { $("saved").textContent = "not saved: the server answered " + resp.status; throw new Error(resp.status); }
    return resp.json();
  }
  async function save(data) {
    show(await call("POST", urls.gradeUrl, data));
    $("saved").textContent = "saved";
  }

  function show(s) {
    state = s;
    $("progress").textContent = s.graded + " of " + s.count + " graded";
    const result = $("result");
    result.className = "result" + (s.status === "graded" ? " graded" : s.review_again ? " again" : "");
    result.textContent = s.status === "graded"
      ? "Graded: " + s.points + " / " + s.max_points + " points" + (s.grader ? " (by " + s.grader + ")" : "")
      : s.review_again ? "The answer changed since it was graded: review it again"
      : "Waiting for a grade (" + s.max_points + " points)";
    const list = $("rubric");
    list.replaceChildren();
    s.items.forEach((item, n) => {
      const li = document.createElement("li");
      li.dataset.item = item.id;
      li.className = item.on ? "on" : "";
      const key = document.createElement("span"); key.className = "key"; key.textContent = n < 9 ? String(n + 1) : "";
      const text = document.createElement("span"); text.className = "text"; text.textContent = item.text;
      const pts = document.createElement("input");
      pts.type = "number"; pts.step = "0.25"; pts.className = "pts"; pts.value = item.points;
      pts.title = "this item's points, for every answer it is applied to";
      pts.addEventListener("click", (e) => e.stopPropagation());
      pts.addEventListener("change", async () => {
        await call("POST", urls.rubricUrl, {id: item.id, text: item.text, points: Number(pts.value)});
        show(await call("GET", urls.stateUrl));
      });
      li.append(key, text, pts);
      li.addEventListener("click", () => toggle(n));
      list.append(li);
    });
    if (document.activeElement !== $("adjustment")) $("adjustment").value = s.adjustment;
    if (document.activeElement !== $("comment")) $("comment").value = s.comment;
  }

  function toggle(n) {
    const item = state && state.items[n];
    if (item) save({item: item.id, on: !item.on});
  }

  $("adjustment").addEventListener("change", () => save({adjustment: Number($("adjustment").value || 0)}));
  let typing = null;
  $("comment").addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => save({comment: $("comment").value}), 400);
  });
  $("comment").addEventListener("blur", () => { clearTimeout(typing); if (state && $("comment").value !== state.comment) save({comment: $("comment").value}); });
  $("done").addEventListener("click", () => save({done: true}));
  $("new-item").addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = $("new-text").value.trim(), points = Number($("new-points").value);
    if (!text || $("new-points").value === "") return;
    await call("POST", urls.rubricUrl, {text, points});
    $("new-text").value = ""; $("new-points").value = "";
    show(await call("GET", urls.stateUrl));
  });

  document.addEventListener("keydown", (e) => {
    const t = e.target;
    if (e.key === "Escape") { t.blur && t.blur(); return; }
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA") || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "ArrowRight" || e.key === "j") go(urls.nextUrl);
    else if (e.key === "ArrowLeft" || e.key === "k") go(urls.previousUrl);
    else if (e.key === "n") go(urls.nextQuestionUrl);
    else if (e.key >= "1" && e.key <= "9") toggle(Number(e.key) - 1);
    else if (e.key === "0") save({done: true});
    else if (e.key === "c") { e.preventDefault(); $("comment").focus(); }
    else if (e.key === "p") { e.preventDefault(); $("adjustment").focus(); }
    else return;
    e.preventDefault();
  });

  call("GET", urls.stateUrl).then(show);
  // Another grader may work on the same class: their rubric items and grades show up here.
  setInterval(() => {
    const t = document.activeElement;
    if (document.hidden || (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA"))) return;
    call("GET", urls.stateUrl).then(show).catch(() => {});
  }, 5000);
})();
