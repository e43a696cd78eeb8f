// The grading page: every change is sent at once; keys for everything a grader does often.
"use strict";
(function () {
  const body = document.body;
  if (body.dataset.page !== "grade") return;
  // Every address comes from the page (the server's url_for): this submission by its id, never a place in a list.
  const token = body.dataset.token, urls = body.dataset;
  const $ = (id) => document.getElementById(id);
  const limit = Number(body.dataset.commentLimit);
  let state = null, pending = 0, conflict = null, chain = Promise.resolve();

  function go(url) { window.location.href = url; }
  function said(text, problem) { $("saved").textContent = text; $("saved").className = problem ? "problem" : "muted"; }

  async function call(method, path, data) {
    const resp = await fetch(path, {
      method, headers: {"X-Review-Token": token, "Content-Type": "application/json"},
      body: data === undefined ? undefined : JSON.stringify(data),
    });
    if (resp.status === 409) return resp.json();  // changed elsewhere: the caller merges
    if (!resp.ok) {
      let why = "the server answered " + resp.status;
      try { why = (await resp.json()).error || why; } catch (e) { /* not JSON */ }
      said("Not saved: " + why, true);
      throw new Error(why);
    }
    return resp.json();
  }
  // A person waives the late penalty (or takes the waiver back): recorded, then the page shows it.
  const waive = $("waive");
  if (waive) waive.addEventListener("click", async () => {
    await call("POST", urls.waiveUrl, {waive: waive.dataset.waived !== "1", reason: $("waive-reason").value});
    window.location.reload();
  });
  // Saves go one after the other, each made on the version of the grade the page shows.
  function save(data) {
    pending += 1;
    chain = chain.then(async () => {
      const answer = await call("POST", urls.gradeUrl, Object.assign({base: state ? state.version : 0}, data));
      if (answer.conflict) { merge(answer.mine, answer.theirs); return; }
      show(answer);
      said("saved", false);
    }).catch(() => {}).finally(() => { pending -= 1; });
    return chain;
  }

  // A save over a newer edit is refused: both are shown, and the grader chooses (or merges by hand).
  function merge(mine, theirs) {
    conflict = {mine, theirs};
    const box = $("conflict");
    box.hidden = false;
    $("conflict-who").textContent = (theirs.grader || "someone") + (theirs.at ? " at " + theirs.at : "");
    $("theirs-comment").textContent = theirs.comment || "(no comment)";
    $("mine-comment").textContent = "comment" in mine ? mine.comment : $("comment").value;
    const other = Object.keys(mine).filter((k) => k !== "comment" && k !== "base");
    $("conflict-other").textContent = other.length
      ? "Your other change (" + other.join(", ") + ") was not saved: the grade shows as it is now; make it again if it still applies."
      : "";
    const keep = $("comment").value;
    state = theirs;
    show(theirs);
    $("comment").value = keep;  // your text stays in the box to merge
    said("Not saved: changed elsewhere since this page read it", true);
  }
  $("keep-mine").addEventListener("click", () => {
    conflict = null; $("conflict").hidden = true;
    save({comment: $("comment").value});
  });
  $("take-theirs").addEventListener("click", () => {
    conflict = null; $("conflict").hidden = true;
    $("comment").value = state.comment; counted(); said("", false);
  });

  function counted() {
    const n = $("comment").value.length;
    $("comment-count").textContent = n.toLocaleString("en") + " of " + limit.toLocaleString("en") + " characters";
    $("comment-count").className = n > limit ? "problem" : "muted";
    return n <= limit;
  }
  function saveComment() {
    if (!counted()) { said("Not saved: the comment is over " + limit.toLocaleString("en") + " characters; shorten it", true); return; }
    if (conflict) return;  // merged by the buttons first
    if (state && $("comment").value !== state.comment) save({comment: $("comment").value});
  }
  function unsaved() {
    return pending > 0 || conflict !== null || (state !== null && $("comment").value !== state.comment);
  }
  window.addEventListener("beforeunload", (e) => {
    if (!unsaved()) return;
    e.preventDefault();
    e.returnValue = "";  // the browser asks whether to leave with text not saved
  });

  function show(s) {
    state = s;
    $("progress").textContent = s.graded + " of " + s.count + " graded" + (s.mine ? " · yours: " + s.mine_graded + " of " + s.mine : "");
    $("assigned").textContent = s.assigned_to ? "(" + (s.assigned_to === body.dataset.grader ? "yours" : "assigned to " + s.assigned_to) + ")" : "";
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
    if (document.activeElement !== $("comment") && !conflict) { $("comment").value = s.comment; counted(); }
    cellsToPick(s);
    $("outputs-problem").hidden = !s.outputs_problem;
    $("outputs-problem").textContent = s.outputs_problem
      ? "Not written yet: " + s.outputs_problem + ". Every grade is saved; the outputs are tried again." : "";
  }

  // No cell found for the question: every cell of the notebook, to tick those that answer it.
  let listed = "";
  function cellsToPick(s) {
    $("pick").hidden = s.found;
    if (s.found) return;
    const key = JSON.stringify([s.notebook, s.picked]);
    if (key === listed) return;
    listed = key;
    const list = $("pick-cells");
    list.replaceChildren();
    s.notebook.forEach((c) => {
      const li = document.createElement("li");
      const box = document.createElement("input");
      box.type = "checkbox"; box.value = c.n; box.checked = s.picked.includes(c.n); box.id = "pick-" + c.n;
      const label = document.createElement("label");
      label.htmlFor = box.id;
      label.textContent = " cell " + c.n + " (" + c.kind + ") ";
      const text = document.createElement("code"); text.textContent = c.preview;
      li.append(box, label);
      if (c.unclaimed) { const u = document.createElement("span"); u.className = "unclaimed"; u.textContent = "unclaimed"; li.append(u, " "); }
      li.append(text);
      list.append(li);
    });
  }
  $("pick-save").addEventListener("click", async () => {
    const cells = Array.from($("pick-cells").querySelectorAll("input:checked")).map((b) => Number(b.value));
    try {
      show(await call("POST", urls.pickUrl, {cells}));
      $("pick-said").textContent = cells.length ? "kept: cells " + cells.join(", ") : "no cell kept";
      $("answer").src = $("answer").src;  // the frame marks them
    } catch (e) { /* said by call */ }
  });

  function toggle(n) {
    const item = state && state.items[n];
    if (item) save({item: item.id, on: !item.on});
  }

  $("adjustment").addEventListener("change", () => save({adjustment: Number($("adjustment").value || 0)}));
  let typing = null;
  $("comment").addEventListener("input", () => {
    clearTimeout(typing);
    counted();
    typing = setTimeout(saveComment, 400);
  });
  $("comment").addEventListener("blur", () => { clearTimeout(typing); saveComment(); });
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
    if (document.hidden || conflict || pending || (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA"))) return;
    call("GET", urls.stateUrl).then(show).catch(() => {});
  }, Number(body.dataset.poll) || 5000);
})();
