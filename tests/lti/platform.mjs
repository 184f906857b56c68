// An LTI 1.3 platform (an LMS, as far as a tool can tell) for the tests of `grader serve`'s LTI:
// its keys, JWTs and the checks of the tool's signed requests are npm's `jose`, nothing by hand.
// Its messages are those of the LTI 1.3 Core, AGS 2.0 and NRPS 2.0 specifications' examples.
//
//   node platform.mjs --tool http://127.0.0.1:PORT [--client-id ID] [--deployment ID]
//
// prints one line, "platform listening on http://127.0.0.1:PORT", then serves:
//   GET  /course?user=U&role=R&exercise=E[&variant=V]   a course page whose link launches the
//        tool (its form posts to the tool's /lti/login at once, as an LMS's launch does)
//   GET  /auth            the OIDC authorization endpoint: answers with a form that posts the
//        id_token and state to the tool's redirect_uri (or, with &format=json, the JSON of it)
//   GET  /jwks            the platform's public keys
//   POST /token           OAuth 2 client credentials with the tool's signed JWT (RFC 7523)
//   GET  /memberships     NRPS: the course's members (pages of 2, linked by rel="next")
//   POST /lineitems/:id/lineitem/scores   AGS: a score
//   GET  /control/scores, POST /control/rotate, POST /control/fail-scores?count=N,
//   POST /control/tool?url=URL, GET /control/requests   what the test reads and changes
//
// Variants (a launch a hostile student or a broken platform makes): expired, wrong-key (signed by
// a key the JWKS does not hold, under the real kid), other-deployment, forged-role (the signed
// token's payload changed to an instructor's, the signature kept), alg-none, wrong-audience,
// wrong-nonce, instructor (an honest instructor's launch).
import http from "node:http";
import crypto from "node:crypto";
import { SignJWT, generateKeyPair, exportJWK, createRemoteJWKSet, jwtVerify } from "jose";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, word, index, words) =>
    word.startsWith("--") ? [...pairs, [word.slice(2), words[index + 1]]] : pairs, []));
let tool = args.tool;
const clientId = args["client-id"] || "962fa4d8-bcbf-49a0-94b2-2de05ad274af";
const deploymentId = args.deployment || "07940580-b309-415e-a37c-914d387c1150";
let issuer = "";  // http://127.0.0.1:PORT, once listening

const LTI = "https://purl.imsglobal.org/spec/lti/claim/";
const ROLE = "http://purl.imsglobal.org/vocab/lis/v2/";
const SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score";
const ROSTER_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly";

// The course: its members, by user_id (the tokens' sub).
const people = {
  ann: { name: "Ann Lee", given: "Ann", family: "Lee", roles: [ROLE + "membership#Learner"] },
  bo: { name: "Bo Chen", given: "Bo", family: "Chen", roles: [ROLE + "membership#Learner"] },
  cy: { name: "Cy Diaz", given: "Cy", family: "Diaz", roles: [ROLE + "membership#Learner"] },
  prof: { name: "Pat Prof", given: "Pat", family: "Prof", roles: [ROLE + "membership#Instructor"] },
};
const subject = (user) => "user-" + user + "-a6d5c443";

let keys = [];  // newest first: { kid, privateKey, publicJwk }
async function addKey() {
  const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
  const kid = "platform-key-" + (keys.length + 1);
  keys.unshift({ kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: "RS256", use: "sig" } });
}
await addKey();
const strangerKey = (await generateKeyPair("RS256")).privateKey;

const scores = [];
const requests = [];
const accessTokens = new Map();  // token -> scopes
let failScores = 0;
let toolKeys = createRemoteJWKSet(new URL(tool + "/lti/jwks"));

function html(response, status, body) {
  response.writeHead(status, { "Content-Type": "text/html; charset=utf-8" });
  response.end("<!doctype html><html><body>" + body + "</body></html>");
}
function json(response, status, body, headers = {}) {
  response.writeHead(status, { "Content-Type": "application/json", ...headers });
  response.end(JSON.stringify(body));
}
const escape = (text) => String(text).replace(/[&<>"']/g, (c) => "&#" + c.charCodeAt(0) + ";");
function autoPost(action, fields) {
  const inputs = Object.entries(fields).map(([name, value]) =>
    `<input type="hidden" name="${escape(name)}" value="${escape(value)}">`).join("");
  return `<form id="post" method="post" action="${escape(action)}">${inputs}</form>` +
    `<script>document.getElementById("post").submit()</script>`;
}
async function body(request) {
  let text = "";
  for await (const chunk of request) text += chunk;
  return text;
}

// The resource link launch of LTI 1.3 Core's example, for one of the course's people.
async function idToken(hint, nonce) {
  const user = people[hint.user] ? hint.user : "ann";
  const person = people[user];
  const variant = hint.variant || "";
  const now = Math.floor(Date.now() / 1000);
  const roles = variant === "instructor" ? [ROLE + "membership#Instructor"] : person.roles;
  const claims = {
    nonce: variant === "wrong-nonce" ? "not-the-tools-nonce" : nonce,
    azp: clientId,
    name: person.name,
    given_name: person.given,
    family_name: person.family,
    email: user + "@platform.example.edu",
    locale: "en-US",
    [LTI + "deployment_id"]: variant === "other-deployment" ? "another-deployment-4c1150" : deploymentId,
    [LTI + "message_type"]: "LtiResourceLinkRequest",
    [LTI + "version"]: "1.3.0",
    [LTI + "roles"]: roles,
    [LTI + "context"]: {
      id: "c1d887f0-a1a3-4bca-ae25-c375edcc131a", label: "GPU 2026",
      title: "GPU Programming", type: [ROLE + "course#CourseOffering"],
    },
    [LTI + "resource_link"]: {
      id: "link-" + (hint.exercise || "default"), title: "Bank conflicts", description: "The self-check",
    },
    [LTI + "tool_platform"]: {
      guid: "ex/48bbb541-ce55-456e-8b7d-ebc59a38d435", name: "Test Platform", version: "1.0",
      product_family_code: "grader-test-platform",
    },
    [LTI + "target_link_uri"]: tool + "/lti/launch" + (hint.exercise ? "?exercise=" + hint.exercise : ""),
    [LTI + "launch_presentation"]: { document_target: "window", return_url: issuer + "/course" },
    [LTI + "custom"]: hint.exercise ? { exercise: hint.exercise } : {},
    [LTI + "lis"]: { person_sourcedid: user, course_section_sourcedid: "GPU-2026-001" },
    "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint": {
      scope: ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem", SCORE_SCOPE],
      lineitems: issuer + "/lineitems",
      lineitem: issuer + "/lineitems/" + (hint.exercise || "default") + "/lineitem?type_id=1",
    },
    "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice": {
      context_memberships_url: issuer + "/memberships", service_versions: ["2.0"],
    },
  };
  const key = keys[0];
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: "RS256", typ: "JWT", kid: key.kid })
    .setIssuer(issuer)
    .setSubject(subject(user))
    .setAudience(variant === "wrong-audience" ? ["another-tool"] : [clientId])
    .setIssuedAt(variant === "expired" ? now - 7200 : now)
    .setExpirationTime(variant === "expired" ? now - 3600 : now + 300);
  let token = await jwt.sign(variant === "wrong-key" ? strangerKey : key.privateKey);
  if (variant === "forged-role") {
    // A student's own token with its payload changed to an instructor's, the signature kept.
    const [header, payload, signature] = token.split(".");
    const claimsSeen = JSON.parse(Buffer.from(payload, "base64url"));
    claimsSeen[LTI + "roles"] = [ROLE + "membership#Instructor"];
    token = [header, Buffer.from(JSON.stringify(claimsSeen)).toString("base64url"), signature].join(".");
  }
  if (variant === "alg-none") {
    const [, payload] = token.split(".");
    token = Buffer.from(JSON.stringify({ alg: "none", typ: "JWT", kid: key.kid })).toString("base64url") +
      "." + payload + ".";
  }
  return token;
}

async function checkAssertion(form) {
  if (form.get("grant_type") !== "client_credentials" ||
      form.get("client_assertion_type") !== "urn:ietf:params:oauth:client-assertion-type:jwt-bearer") {
    throw new Error("not a client-credentials grant with a JWT assertion");
  }
  const { payload } = await jwtVerify(form.get("client_assertion"), toolKeys, {
    issuer: clientId, subject: clientId, audience: issuer + "/token", algorithms: ["RS256"],
  });
  if (!payload.jti) throw new Error("the assertion has no jti");
}

function bearer(request, scope) {
  const header = request.headers.authorization || "";
  const scopes = accessTokens.get(header.replace(/^Bearer /, "")) || [];
  return scopes.includes(scope);
}

const server = http.createServer(async (request, response) => {
  const url = new URL(request.url, issuer);
  requests.push(request.method + " " + url.pathname);
  try {
    if (request.method === "GET" && url.pathname === "/course") {
      const hint = { user: url.searchParams.get("user") || "ann", exercise: url.searchParams.get("exercise") || "",
        variant: url.searchParams.get("variant") || "" };
      return html(response, 200, "<h1>GPU Programming</h1>" + autoPost(tool + "/lti/login", {
        iss: issuer, login_hint: hint.user, target_link_uri: tool + "/lti/launch",
        lti_message_hint: JSON.stringify(hint), client_id: clientId, lti_deployment_id: deploymentId,
      }));
    }
    if (request.method === "GET" && url.pathname === "/auth") {
      const q = url.searchParams;
      if (q.get("client_id") !== clientId || q.get("response_type") !== "id_token" ||
          q.get("scope") !== "openid" || q.get("response_mode") !== "form_post" || !q.get("nonce") ||
          q.get("redirect_uri") !== tool + "/lti/launch") {
        return html(response, 400, "invalid authentication request");
      }
      const hint = JSON.parse(q.get("lti_message_hint") || "{}");
      const fields = { id_token: await idToken({ user: q.get("login_hint"), ...hint }, q.get("nonce")), state: q.get("state") };
      if (q.get("format") === "json") return json(response, 200, { ...fields, action: q.get("redirect_uri") });
      return html(response, 200, autoPost(q.get("redirect_uri"), fields));
    }
    if (request.method === "GET" && url.pathname === "/jwks") {
      return json(response, 200, { keys: keys.map((key) => key.publicJwk) });
    }
    if (request.method === "POST" && url.pathname === "/token") {
      const form = new URLSearchParams(await body(request));
      try {
        await checkAssertion(form);
      } catch (error) {
        return json(response, 401, { error: "invalid_client", error_description: String(error.message) });
      }
      const granted = (form.get("scope") || "").split(" ").filter((s) => s === SCORE_SCOPE || s === ROSTER_SCOPE);
      const token = crypto.randomBytes(24).toString("hex");
      accessTokens.set(token, granted);
      return json(response, 200, { access_token: token, token_type: "Bearer", expires_in: 3600, scope: granted.join(" ") });
    }
    if (request.method === "GET" && url.pathname === "/memberships") {
      if (!bearer(request, ROSTER_SCOPE)) return json(response, 401, { error: "unauthorized" });
      const all = Object.entries(people).map(([user, person]) => ({
        status: "Active", name: person.name, given_name: person.given, family_name: person.family,
        email: user + "@platform.example.edu", user_id: subject(user), lis_person_sourcedid: user, roles: person.roles,
      }));
      const from = Number(url.searchParams.get("from") || 0);
      const headers = from + 2 < all.length ? { Link: `<${issuer}/memberships?from=${from + 2}>; rel="next"` } : {};
      response.writeHead(200, { "Content-Type": "application/vnd.ims.lti-nrps.v2.membershipcontainer+json", ...headers });
      return response.end(JSON.stringify({
        id: issuer + "/memberships",
        context: { id: "c1d887f0-a1a3-4bca-ae25-c375edcc131a", label: "GPU 2026", title: "GPU Programming" },
        members: all.slice(from, from + 2),
      }));
    }
    const scoreMatch = url.pathname.match(/^\/lineitems\/([^/]+)\/lineitem\/scores$/);
    if (request.method === "POST" && scoreMatch) {
      if (!bearer(request, SCORE_SCOPE)) return json(response, 401, { error: "unauthorized" });
      if (request.headers["content-type"] !== "application/vnd.ims.lis.v1.score+json") {
        return json(response, 415, { error: "a score is application/vnd.ims.lis.v1.score+json" });
      }
      if (url.searchParams.get("type_id") !== "1") return json(response, 400, { error: "the line item's query was lost" });
      const score = JSON.parse(await body(request));
      if (failScores > 0) {
        failScores -= 1;
        return json(response, 503, { error: "the gradebook is down for a moment" });
      }
      for (const field of ["userId", "scoreGiven", "scoreMaximum", "activityProgress", "gradingProgress", "timestamp"]) {
        if (score[field] === undefined) return json(response, 400, { error: "no " + field });
      }
      scores.push({ lineitem: scoreMatch[1], ...score, received: Date.now() / 1000 });
      response.writeHead(204);
      return response.end();
    }
    if (url.pathname === "/control/scores") return json(response, 200, scores);
    if (url.pathname === "/control/requests") return json(response, 200, requests);
    if (request.method === "POST" && url.pathname === "/control/rotate") {
      await addKey();
      keys.length = 1;  // the old key is withdrawn, as a rotation does
      return json(response, 200, { kid: keys[0].kid });
    }
    if (request.method === "POST" && url.pathname === "/control/tool") {
      // The tool restarted elsewhere (another port): its URLs, and its keys fetched again.
      tool = url.searchParams.get("url");
      toolKeys = createRemoteJWKSet(new URL(tool + "/lti/jwks"));
      return json(response, 200, { tool });
    }
    if (request.method === "POST" && url.pathname === "/control/fail-scores") {
      failScores = Number(url.searchParams.get("count") || 1);
      return json(response, 200, { failing: failScores });
    }
    return json(response, 404, { error: "no such endpoint" });
  } catch (error) {
    return json(response, 500, { error: String(error && error.message) });
  }
});

server.listen(Number(args.port || 0), "127.0.0.1", () => {
  issuer = "http://127.0.0.1:" + server.address().port;
  console.log("platform listening on " + issuer);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
