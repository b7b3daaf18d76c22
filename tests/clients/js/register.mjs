// masto.js registers a user: rest.v1.accounts.create sends multipart/form-data (masto
// infers it for POST /api/v1/accounts) with a client_credentials token.
import { createOAuthAPIClient, createRestAPIClient } from "masto";
import { BASE, SCOPES, app, check, name, passed } from "./common.mjs";

const client = await app();
const appToken = await createOAuthAPIClient({ url: BASE }).token.create({
  grantType: "client_credentials",
  clientId: client.clientId,
  clientSecret: client.clientSecret,
  redirectUri: "urn:ietf:wg:oauth:2.0:oob",
  scope: SCOPES,
});
const id = name("mreg");
const asApp = createRestAPIClient({ url: BASE, accessToken: appToken.accessToken });
const token = await asApp.v1.accounts.create({
  username: id,
  email: `${id}@example.invalid`,
  password: "correct horse battery",
  agreement: true,
  locale: "en",
});
const me = await createRestAPIClient({ url: BASE, accessToken: token.accessToken }).v1.accounts.verifyCredentials();
check(me.username === id, `registration signs in ${id}`, me);
passed("masto.js registration (multipart)");
