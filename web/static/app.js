// lazy web: live updates. The pages are complete without this script;
// it follows /events (Server-Sent Events) and patches the DOM in place:
// task states and substates on the list, and on a task page its state,
// the agent's output as it is written, and the sections a new operation
// changes (fetched again and swapped, never a full reload). Text is only
// ever set with textContent.
"use strict";
(function () {
  var body = document.body;
  var page = body.dataset.page;
  var taskID = body.dataset.task || "";
  var head = body.dataset.head || "";
  var offset = body.dataset.offset || "0";
  var liveState = document.getElementById("livestate");
  var maxLog = 1000;

  function setLive(el, text) {
    if (el) el.textContent = text ? "(" + text + ")" : "";
  }
  function setStatus(el, status) {
    if (!el) return;
    el.textContent = status;
    el.className = "st " + status;
  }

  function onTasks(list) {
    list.forEach(function (t) {
      if (page === "task") {
        if (t.id !== taskID) return;
        setStatus(document.getElementById("status"), t.status);
        setLive(document.getElementById("live"), t.live);
        var pl = document.getElementById("progress-line");
        if (pl) {
          document.getElementById("progress").textContent = t.progress || "";
          pl.hidden = !t.progress;
        }
        if (t.head && head && t.head !== head) {
          head = t.head;
          refreshSections();
        }
        return;
      }
      var rows = document.querySelectorAll('.task[data-id="' + CSS.escape(t.id) + '"]');
      if (rows.length === 0) {
        notice("Tasks this page does not show changed (" + t.status + "); reload to see them.");
        return;
      }
      rows.forEach(function (row) {
        setStatus(row.querySelector(".st"), t.status);
        setLive(row.querySelector(".live"), t.live);
        var prog = row.querySelector(".progress");
        if (prog) prog.textContent = t.progress || "";
        var turns = row.querySelector(".turns");
        if (turns) turns.textContent = String(t.turns);
        var col = row.closest(".col");
        if (col && col.dataset.col !== t.category) {
          var dest = document.querySelector('.col[data-col="' + CSS.escape(t.category) + '"] ul');
          if (dest) dest.insertBefore(row, dest.firstChild);
        }
      });
    });
  }

  function notice(text) {
    var n = document.getElementById("notice");
    if (!n) return;
    n.textContent = text;
    n.hidden = false;
  }

  function onLog(msg) {
    var log = document.getElementById("log");
    if (!log) return;
    var empty = document.getElementById("log-empty");
    if (empty) empty.remove();
    var stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 30;
    msg.entries.forEach(function (e) {
      var li = document.createElement("li");
      li.className = "k-" + e.k;
      li.textContent = e.t;
      log.appendChild(li);
    });
    while (log.children.length > maxLog) log.removeChild(log.firstChild);
    if (stick) log.scrollTop = log.scrollHeight;
    offset = String(msg.offset);
  }

  function onPhase(p) {
    var el = page === "task" ? document.getElementById("phase") : null;
    var text = p.op + (p.of ? " step " + p.step + "/" + p.of : "") + (p.label ? ": " + p.label : "");
    if (el) {
      el.textContent = text;
      el.hidden = false;
      return;
    }
    var rows = document.querySelectorAll('.task[data-id="' + CSS.escape(p.id) + '"] .live');
    rows.forEach(function (r) { r.textContent = "(" + text + ")"; });
  }

  // refreshSections fetches this page again and swaps the sections a new
  // operation changes; the form a person is typing in is left alone.
  var refreshing = false;
  function refreshSections() {
    if (refreshing) return;
    refreshing = true;
    fetch(location.pathname + location.search, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        ["status-line", "working-note", "turns", "diff", "comments", "changelog", "goal"].forEach(function (id) {
          var old = document.getElementById(id), fresh = doc.getElementById(id);
          if (old && fresh) old.replaceWith(document.importNode(fresh, true));
        });
        var acts = document.getElementById("actions"), freshActs = doc.getElementById("actions");
        var typing = acts && Array.prototype.some.call(acts.querySelectorAll("textarea"), function (t) { return t.value !== ""; });
        if (acts && freshActs && !typing) acts.replaceWith(document.importNode(freshActs, true));
      })
      .catch(function () {})
      .then(function () { refreshing = false; });
  }

  var failures = 0;
  function connect() {
    var url = "/events";
    if (page === "task") {
      url += "?task=" + encodeURIComponent(taskID) + "&offset=" + encodeURIComponent(offset);
    } else {
      var ids = Array.prototype.map.call(document.querySelectorAll(".task[data-id]"), function (el) { return el.dataset.id; });
      url += "?ids=" + encodeURIComponent(ids.join(","));
    }
    var es = new EventSource(url);
    es.addEventListener("tasks", function (ev) { onTasks(JSON.parse(ev.data)); });
    es.addEventListener("log", function (ev) { onLog(JSON.parse(ev.data)); });
    es.addEventListener("phase", function (ev) { onPhase(JSON.parse(ev.data)); });
    es.onopen = function () { failures = 0; if (liveState) liveState.textContent = "Live: this page follows the daemon."; };
    es.onerror = function () {
      failures++;
      if (liveState) liveState.textContent = failures > 5 ? "The daemon stopped; run lazy web for the new URL." : "Reconnecting to the daemon…";
      // The log offset moves with the page: reconnect from it, not from
      // the URL the stream was first opened with.
      es.close();
      setTimeout(connect, 2000);
    };
  }
  if (window.EventSource) connect();
})();
