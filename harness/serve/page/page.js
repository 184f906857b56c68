// The page of `grader serve`: sign in with a token, upload, watch both grades arrive, read
// earlier attempts. Every report is HTML the service escaped; this script only places it.
"use strict";

const state = { token: "", me: null, shown: 0, timer: 0, loaded: {} };
const $ = (id) => document.getElementById(id);

function show(id, visible) { $(id).hidden = !visible; }

async function api(path, options) {
  const init = Object.assign({ headers: {} }, options || {});
  init.headers["Authorization"] = "Bearer " + state.token;
  const response = await fetch("api/" + path, init);
  const type = response.headers.get("Content-Type") || "";
  const body = type.startsWith("application/json") ? await response.json() : await response.text();
  if (!response.ok) {
    const error = new Error(body && body.error ? body.error : statusText(response.status));
    error.status = response.status;
    throw error;
  }
  return body;
}

// What a status means where the service gave no reason of its own: the web server in front of
// it (docs/serve.md's nginx or Caddy) answered instead.
function statusText(status) {
  if (status === 413) {
    return "The upload is larger than the web server in front of the service takes (HTTP 413): " +
      "send less, or ask your instructor.";
  }
  if (status === 502 || status === 503 || status === 504) {
    return "The web server in front of the service got no answer from it (HTTP " + status +
      "): it is down or busy; try again in a minute.";
  }
  return "The service answered HTTP " + status + ".";
}

function sizeText(bytes) {
  return bytes >= 1024 * 1024 ? (bytes / (1024 * 1024)).toFixed(1) + " MB" : Math.ceil(bytes / 1024) + " KB";
}

// An upload the service would refuse for its size, said before it is sent (a proxy in front of
// the service may cut a large one off without its reason).
function tooLarge(files) {
  const limits = state.me && state.me.upload;
  if (!limits) return "";
  let total = 0;
  for (const file of files) {
    total += file.size;
    if (!/\.zip$/i.test(file.name) && file.size > limits.max_file_bytes) {
      return "'" + file.name + "' is " + sizeText(file.size) + ": a file may be at most " +
        sizeText(limits.max_file_bytes) + ".";
    }
  }
  if (total > limits.max_bytes) {
    return "Your files add up to " + sizeText(total) + ": at most " + sizeText(limits.max_bytes) +
      " is taken in one upload.";
  }
  return "";
}

function verdictText(lane) {
  if (!lane) return "";
  if (lane.state !== "done") return lane.state;
  return lane.verdict.toUpperCase() + " " + lane.score + "/" + lane.max_score;
}

function laneStatus(name, lane) {
  if (!lane) return name === "gpu" ? "This service has no GPU: the simulator's report is the grade." : "";
  if (lane.state === "queued") {
    const ahead = lane.ahead === 0 ? "next in line" : lane.ahead + " ahead of you";
    return "Waiting for its turn: " + ahead + ", " + lane.running + " being graded now.";
  }
  if (lane.state === "running") return "Being graded now...";
  return "";
}

async function signIn(token) {
  state.token = token.trim();
  $("token-error").textContent = "";
  try {
    state.me = await api("me");
  } catch (error) {
    $("token-error").textContent = error.message;
    return;
  }
  // A course session (an LMS's launch) is this tab's alone; a token is remembered.
  try {
    if (state.me.lti) sessionStorage.setItem("grader-lti", state.token);
    else localStorage.setItem("grader-token", state.token);
  } catch (ignored) { /* private mode */ }
  const notes = [];
  if (!state.me.gpu) notes.push("This service has no GPU: the simulator's report is the grade.");
  if (state.me.service && state.me.service.problem) notes.push("The service: " + state.me.service.problem);
  $("who").textContent = "Signed in as " + state.me.login + (state.me.name ? " (" + state.me.name + ")" : "") +
    (state.me.role === "instructor" ? ", instructor" : "") + (notes.length ? ". " + notes.join(" ") : "");
  show("sign-out", true);
  // A lane the service does not have is not drawn.
  show("lane-gpu", state.me.gpu);
  $("lane-gpu").parentElement.classList.toggle("one-lane", !state.me.gpu);
  document.body.classList.toggle("no-gpu", !state.me.gpu);
  const select = $("exercise");
  select.textContent = "";
  for (const exercise of state.me.exercises) {
    const option = document.createElement("option");
    option.value = exercise.id;
    option.textContent = exercise.title + " (" + exercise.files.join(", ") + ")";
    select.appendChild(option);
  }
  if (state.me.lti) {
    select.value = state.me.lti.exercise;
    $("lti").textContent = (state.me.lti.course ? state.me.lti.course + ": " : "") +
      (state.me.lti.gradebook
        ? "your " + state.me.lti.policy + " score goes to the course's gradebook" +
          (state.me.lti.platform ? " in " + state.me.lti.platform : "") + "."
        : "this activity takes no grade; your attempts are kept here.");
  }
  show("lti", Boolean(state.me.lti));
  show("roster-button", Boolean(state.me.lti && state.me.lti.roster));
  updateHint();
  updateRate(state.me.rate);
  show("sign-in", false);
  show("upload", true);
  show("history", true);
  show("student-form", state.me.role === "instructor");
  $("history-title").textContent = state.me.role === "instructor" ? "Attempts" : "Your attempts";
  await loadHistory();
}

function updateHint() {
  const exercise = state.me.exercises.find((e) => e.id === $("exercise").value);
  if (exercise) $("files-hint").textContent = "Choose " + exercise.files.join(" and ") + ", or one zip holding them.";
}

function updateRate(rate) {
  if (!rate) return;
  $("rate").textContent = rate.left + " of " + rate.limit + " attempts left in this window";
}

async function submit(event) {
  event.preventDefault();
  $("upload-error").textContent = "";
  const files = $("files").files;
  if (files.length === 0) {
    $("upload-error").textContent = "Choose your files first.";
    return;
  }
  const refusal = tooLarge(files);
  if (refusal) {
    $("upload-error").textContent = refusal;
    return;
  }
  const form = new FormData();
  form.append("exercise", $("exercise").value);
  for (const file of files) form.append("files", file, file.name);
  $("submit").disabled = true;
  try {
    const attempt = await api("attempts", { method: "POST", body: form });
    await showAttempt(attempt.id);
    const me = await api("me");
    updateRate(me.rate);
  } catch (error) {
    $("upload-error").textContent = error.message;
  } finally {
    $("submit").disabled = false;
  }
  await loadHistory();
}

// A submitted file, fetched with the token and handed to the browser as a download.
async function download(id, name) {
  const response = await fetch("api/attempts/" + id + "/files/" + encodeURIComponent(name),
                               { headers: { "Authorization": "Bearer " + state.token } });
  if (!response.ok) return;
  const link = document.createElement("a");
  link.href = URL.createObjectURL(await response.blob());
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
}

function showFiles(attempt) {
  const files = $("attempt-files");
  files.textContent = "Download what was submitted: ";
  for (const name of attempt.files) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = name;
    button.addEventListener("click", () => download(attempt.id, name));
    files.appendChild(button);
    files.appendChild(document.createTextNode(" "));
  }
}

async function showAttempt(id) {
  clearTimeout(state.timer);
  state.shown = id;
  state.loaded = {};
  for (const lane of ["sim", "gpu"]) $("lane-" + lane).querySelector(".body").textContent = "";
  $("explain").querySelector(".body").innerHTML = "<p class=\"hint\">Made after the simulator's report.</p>";
  show("attempt", true);
  await poll();
}

async function poll() {
  const id = state.shown;
  let attempt;
  try {
    attempt = await api("attempts/" + id);
  } catch (error) {
    $("attempt-title").textContent = error.message;
    return;
  }
  if (id !== state.shown) return;
  $("attempt-title").textContent = "Attempt " + attempt.number + " of " + attempt.student + ", " +
    attempt.created + ": " + attempt.files.join(", ");
  if ($("attempt-files").dataset.attempt !== String(id)) {
    $("attempt-files").dataset.attempt = String(id);
    showFiles(attempt);
  }
  let waiting = false;
  for (const name of ["sim", "gpu"]) {
    const lane = attempt.lanes[name];
    const article = $("lane-" + name);
    const status = article.querySelector(".status");
    status.textContent = laneStatus(name, lane);
    status.className = "status" + (lane && lane.state !== "done" ? " waiting" : "");
    if (lane && lane.state === "done" && !state.loaded[name]) {
      state.loaded[name] = true;
      try {
        article.querySelector(".body").innerHTML = await api("attempts/" + id + "/report?lane=" + name + "&format=html");
      } catch (error) {
        article.querySelector(".body").textContent = lane.summary || error.message;
      }
    }
    if (lane && lane.state !== "done") waiting = true;
  }
  if (attempt.explain === "ready" && !state.loaded.explain) {
    state.loaded.explain = true;
    $("explain").querySelector(".body").innerHTML = await api("attempts/" + id + "/explain?format=html");
  } else if (attempt.explain !== "ready" && attempt.lanes.sim && attempt.lanes.sim.state === "done") {
    waiting = true;
  }
  if (waiting) {
    state.timer = setTimeout(poll, 1000);
  } else {
    await loadHistory();
  }
}

async function loadHistory() {
  const student = $("student").value.trim();
  let query = "attempts";
  if (state.me.role === "instructor") query += student ? "?student=" + encodeURIComponent(student) : "?all";
  let list;
  try {
    list = await api(query);
  } catch (error) {
    $("upload-error").textContent = error.message;
    return;
  }
  const body = $("attempts").querySelector("tbody");
  body.textContent = "";
  for (const attempt of list.attempts) {
    const row = document.createElement("tr");
    const cells = [attempt.number, attempt.student, attempt.created, attempt.exercise,
                   verdictText(attempt.lanes.sim), verdictText(attempt.lanes.gpu), attempt.files.join(", ")];
    cells.forEach((text, index) => {
      const cell = document.createElement("td");
      cell.textContent = text;
      const lane = index === 4 ? attempt.lanes.sim : (index === 5 ? attempt.lanes.gpu : null);
      if (lane && lane.state === "done") cell.className = "v-" + lane.verdict;
      if (index === 5) cell.classList.add("gpu-only");
      row.appendChild(cell);
    });
    row.addEventListener("click", () => showAttempt(attempt.id));
    body.appendChild(row);
  }
}

// Forgets the token, here and in the browser's storage: a shared computer keeps nothing of it.
function signOut() {
  clearTimeout(state.timer);
  try {
    localStorage.removeItem("grader-token");
    sessionStorage.removeItem("grader-lti");
  } catch (ignored) { /* private mode */ }
  state.token = "";
  state.me = null;
  state.shown = 0;
  state.loaded = {};
  $("token").value = "";
  $("who").textContent = "";
  $("upload-error").textContent = "";
  $("lti").textContent = "";
  $("roster-error").textContent = "";
  $("attempts").querySelector("tbody").textContent = "";
  $("roster").querySelector("tbody").textContent = "";
  for (const lane of ["sim", "gpu"]) {
    $("lane-" + lane).querySelector(".body").textContent = "";
    $("lane-" + lane).querySelector(".status").textContent = "";
  }
  $("explain").querySelector(".body").textContent = "";
  $("attempt-files").textContent = "";
  delete $("attempt-files").dataset.attempt;
  for (const id of ["upload", "attempt", "history", "sign-out", "student-form", "lti", "roster-button",
                    "roster"]) show(id, false);
  show("sign-in", true);
}

// The course's members (the LMS's roster, read by NRPS) with their attempts here.
async function loadRoster() {
  $("roster-error").textContent = "";
  let roster;
  try {
    roster = await api("lti/roster");
  } catch (error) {
    $("roster-error").textContent = error.message;
    return;
  }
  const body = $("roster").querySelector("tbody");
  body.textContent = "";
  for (const member of roster.members) {
    const row = document.createElement("tr");
    const best = member.attempts > 0 && member.max_score ? member.best + "/" + member.max_score : "";
    for (const text of [member.name, member.login || "", member.instructor ? "instructor" : "student",
                        member.attempts, best, member.score || ""]) {
      const cell = document.createElement("td");
      cell.textContent = text;
      row.appendChild(cell);
    }
    body.appendChild(row);
  }
  show("roster", true);
}

$("token-form").addEventListener("submit", (event) => { event.preventDefault(); signIn($("token").value); });
$("sign-out").addEventListener("click", signOut);
$("upload-form").addEventListener("submit", submit);
$("exercise").addEventListener("change", updateHint);
$("student-form").addEventListener("submit", (event) => { event.preventDefault(); loadHistory(); });
$("roster-button").addEventListener("click", loadRoster);
// An LMS's launch lands here with its session in the fragment (#lti=gl-...): taken, then
// removed from the address bar and the history.
const launched = /^#lti=(gl-[0-9a-f]+)$/.exec(location.hash);
if (launched) history.replaceState(null, "", location.pathname + location.search);
try {
  const saved = launched ? launched[1] : (sessionStorage.getItem("grader-lti") || localStorage.getItem("grader-token"));
  if (saved) signIn(saved);
} catch (ignored) {
  if (launched) signIn(launched[1]);
}
// Said once every handler is in place (a test's browser waits for it before it clicks).
document.documentElement.dataset.ready = "true";
