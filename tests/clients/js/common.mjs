// What the masto.js scenarios share: the server's address (tests/clients.rs passes it in
// SOCIALITE_BASE_URL), fresh names, a check that says what it expected, and a user made
// through socialite's own API with a password, signed in by masto's password grant.
import { randomBytes } from "node:crypto";
import { createOAuthAPIClient, createRestAPIClient } from "masto";

export const BASE = process.env.SOCIALITE_BASE_URL;
export const SCOPES = "read write follow push";

export const name = (prefix) => `${prefix}_${randomBytes(4).toString("hex")}`;

export function check(condition, what, got) {
  if (!condition) {
    throw new Error(got === undefined ? what : `${what}; got ${JSON.stringify(got)}`);
  }
}

// An app registered through masto: { clientId, clientSecret, ... }.
export async function app(redirectUris = "urn:ietf:wg:oauth:2.0:oob") {
  const anonymous = createRestAPIClient({ url: BASE });
  return anonymous.v1.apps.create({ clientName: "masto.js test", redirectUris, scopes: SCOPES });
}

// A user with a password (POST /v1/users), then a token from masto's password grant:
// { id, password, token, rest }.
export async function signedIn(prefix) {
  const id = name(prefix);
  const password = "correct horse battery";
  const made = await fetch(`${BASE}/v1/users`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ id, password }),
  });
  check(made.status === 201, "the user is made", await made.text());
  const client = await app();
  const oauth = createOAuthAPIClient({ url: BASE });
  const token = await oauth.token.create({
    grantType: "password",
    clientId: client.clientId,
    clientSecret: client.clientSecret,
    redirectUri: "urn:ietf:wg:oauth:2.0:oob",
    username: id,
    password,
    scope: SCOPES,
  });
  return { id, password, token, rest: createRestAPIClient({ url: BASE, accessToken: token.accessToken }) };
}

export function passed(scenario) {
  console.log(`scenario passed: ${scenario}`);
}

// Reads until ok(value) holds and answers that value: timelines and notifications are
// kept by the server's workers, which apply a write shortly after it is acknowledged.
// Fails with the last value after `limit` ms (a bound on a worker's lag, not a measure).
export async function eventually(read, ok, what, limit = 30_000) {
  const deadline = Date.now() + limit;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${limit} ms; last read ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
